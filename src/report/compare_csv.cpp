// parity.compare.csv/2: one line per compared pair, for spreadsheets and pandas.
// Cells spelled as parity/csv_cell.h says: RFC 4180 quoting; numbers in the shortest round-trip form;
// non-finite as nan/inf/-inf
// (what pandas.read_csv and numpy parse); a cell that does not apply to the row's mode is empty.
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstring>

#include "parity/csv_cell.h"
#include "report/compare_report.h"

namespace parity::report {

namespace {

std::string num(double v) { return csv_number(v); }

std::string num(int64_t v) { return std::to_string(v); }

constexpr const char* kColumns[] = {
    "name", "target_name", "match", "mode", "golden_dtype", "target_dtype", "golden_shape", "target_shape",
    "module", "op", "direction", "role", "index", "step", "rank", "order", "verdict", "reason",
    "cosine", "euclidean", "rel_l2", "rmse", "sqnr_db", "max_abs", "max_abs_index", "mean_abs", "max_rel",
    "max_rel_index", "thousandth_ratio", "five_thousandth_ratio", "frac_abs_gt_1e6", "frac_abs_gt_1e4",
    "frac_abs_gt_1e2", "ulp_max", "ulp_mean", "frac_ulp_gt1", "nonfinite_mismatch", "ftz_count", "kl",
    "stats_max_rel", "stats_min_rel", "stats_mean_rel", "stats_norm_rel", "checksum_equal", "noise",
    "noise_ratio"};

}  // namespace

void write_compare_csv(const CompareResult& result, std::FILE* out) {
  std::string columns;
  for (const char* c : kColumns) columns += (columns.empty() ? "" : ",") + std::string(c);
  std::fputs(csv_header(columns).c_str(), out);
  for (const CompareRow& r : result.rows) {
    std::vector<std::string> cells = {
        kCompareCsvSchema, r.golden->name, r.target->name, match_kind_name(r.match), compare_mode_name(r.mode),
        dtype_name(r.golden->dtype), dtype_name(r.target->dtype), shape_to_string(r.golden->shape),
        shape_to_string(r.target->shape), r.golden->module, r.golden->op, r.golden->direction, r.golden->role,
        num(int64_t{r.golden->index}), num(r.golden->step), num(int64_t{r.golden->rank}), num(r.golden->order),
        verdict_name(r.verdict), r.reason};
    if (r.metrics) {
      const PairMetrics& m = *r.metrics;
      for (std::string s : {num(m.cosine), num(m.euclidean), num(m.rel_l2), num(m.rmse), num(m.sqnr_db),
                            num(m.max_abs), num(m.max_abs_index), num(m.mean_abs), num(m.max_rel),
                            num(m.max_rel_index), num(m.thousandth_ratio), num(m.five_thousandth_ratio),
                            num(m.frac_abs_gt_1e6), num(m.frac_abs_gt_1e4), num(m.frac_abs_gt_1e2),
                            num(m.ulp_max), num(m.ulp_mean), num(m.frac_ulp_gt1), num(m.nonfinite_mismatch),
                            num(m.ftz_count), m.kl_computed ? num(m.kl) : std::string()}) {
        cells.push_back(std::move(s));
      }
    } else {
      cells.insert(cells.end(), 21, std::string());
    }
    if (r.stats) {
      const StatsDifferences s = stats_differences(r);
      for (double v : {s.max_rel, s.min_rel, s.mean_rel, s.norm_rel}) cells.push_back(num(v));
    } else {
      cells.insert(cells.end(), 4, std::string());
    }
    cells.push_back(r.checksum_equal ? (*r.checksum_equal ? "true" : "false") : "");
    cells.push_back(noise_class_name(r.noise));
    cells.push_back(num(r.noise_ratio));
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) line += ',';
      line += csv_escape(cells[i]);
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
}

Status write_compare_csv(const CompareResult& result, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Status::IOError(path + ": cannot write CSV: " + std::strerror(errno));
  write_compare_csv(result, f);
  const bool failed = std::ferror(f) != 0;
  if (std::fclose(f) != 0 || failed) return Status::IOError(path + ": error writing CSV");
  return Status::OK();
}

}  // namespace parity::report
