// The row table's columns (report/compare_columns.h). A column's type is what its cells hold:
// compare_row_cells checks each cell against it in debug builds.
#include "report/compare_columns.h"

#include <cassert>

namespace parity::report {

namespace {

using T = CellType;

constexpr Column kColumns[] = {
    {"name", T::kText},         {"target_name", T::kText},     {"match", T::kText},
    {"mode", T::kText},         {"golden_dtype", T::kText},    {"target_dtype", T::kText},
    {"golden_shape", T::kText}, {"target_shape", T::kText},    {"module", T::kText},
    {"op", T::kText},           {"direction", T::kText},       {"role", T::kText},
    {"index", T::kInt},         {"step", T::kInt},             {"rank", T::kInt},
    {"order", T::kInt},         {"verdict", T::kText},         {"reason", T::kText},
    // tensor mode (PairMetrics)
    {"cosine", T::kReal},       {"euclidean", T::kReal},       {"rel_l2", T::kReal},
    {"rmse", T::kReal},         {"sqnr_db", T::kReal},         {"max_abs", T::kReal},
    {"max_abs_index", T::kInt}, {"mean_abs", T::kReal},        {"max_rel", T::kReal},
    {"max_rel_index", T::kInt}, {"thousandth_ratio", T::kReal}, {"five_thousandth_ratio", T::kReal},
    {"frac_abs_gt_1e6", T::kReal}, {"frac_abs_gt_1e4", T::kReal}, {"frac_abs_gt_1e2", T::kReal},
    {"ulp_max", T::kReal},      {"ulp_mean", T::kReal},        {"frac_ulp_gt1", T::kReal},
    {"nonfinite_mismatch", T::kInt}, {"ftz_count", T::kInt},   {"kl", T::kReal},
    // statistics mode (StatsDifferences)
    {"stats_max_rel", T::kReal}, {"stats_min_rel", T::kReal}, {"stats_mean_rel", T::kReal},
    {"stats_norm_rel", T::kReal},
    // checksum mode, then every row
    {"checksum_equal", T::kBool}, {"noise", T::kText},         {"noise_ratio", T::kReal}};

constexpr size_t kTensorColumns = 21, kStatsColumns = 4;

[[maybe_unused]] bool holds(const Cell& cell, CellType type) {  // for the assert below
  switch (type) {
    case T::kText: return std::holds_alternative<std::string>(cell);
    case T::kInt: return std::holds_alternative<int64_t>(cell);
    case T::kReal: return std::holds_alternative<double>(cell);
    case T::kBool: return std::holds_alternative<bool>(cell);
  }
  return false;
}

void add_tensor_cells(const PairMetrics& m, std::vector<Cell>& cells) {
  for (double v : {m.cosine, m.euclidean, m.rel_l2, m.rmse, m.sqnr_db, m.max_abs}) cells.emplace_back(v);
  cells.emplace_back(m.max_abs_index);
  cells.emplace_back(m.mean_abs);
  cells.emplace_back(m.max_rel);
  cells.emplace_back(m.max_rel_index);
  for (double v : {m.thousandth_ratio, m.five_thousandth_ratio, m.frac_abs_gt_1e6, m.frac_abs_gt_1e4,
                   m.frac_abs_gt_1e2, m.ulp_max, m.ulp_mean, m.frac_ulp_gt1}) {
    cells.emplace_back(v);
  }
  cells.emplace_back(m.nonfinite_mismatch);
  cells.emplace_back(m.ftz_count);
  if (m.kl_computed) {
    cells.emplace_back(m.kl);
  } else {
    cells.emplace_back();
  }
}

}  // namespace

std::span<const Column> compare_columns() { return kColumns; }

void compare_row_cells(const CompareRow& r, std::vector<Cell>& cells) {
  cells.clear();
  const Record& g = *r.golden;
  for (std::string s : {std::string(g.name), std::string(r.target->name), std::string(match_kind_name(r.match)),
                        std::string(compare_mode_name(r.mode)), std::string(dtype_name(g.dtype)),
                        std::string(dtype_name(r.target->dtype)), shape_to_string(g.shape),
                        shape_to_string(r.target->shape), std::string(g.module), std::string(g.op),
                        std::string(g.direction), std::string(g.role)}) {
    cells.emplace_back(std::move(s));
  }
  for (int64_t v : {int64_t{g.index}, int64_t{g.step}, int64_t{g.rank}, int64_t{g.order}}) cells.emplace_back(v);
  cells.emplace_back(std::string(verdict_name(r.verdict)));
  cells.emplace_back(r.reason);
  if (r.metrics) {
    add_tensor_cells(*r.metrics, cells);
  } else {
    cells.resize(cells.size() + kTensorColumns);
  }
  if (r.stats) {
    const StatsDifferences s = stats_differences(r);
    for (double v : {s.max_rel, s.min_rel, s.mean_rel, s.norm_rel}) cells.emplace_back(v);
  } else {
    cells.resize(cells.size() + kStatsColumns);
  }
  if (r.checksum_equal) {
    cells.emplace_back(*r.checksum_equal);
  } else {
    cells.emplace_back();
  }
  cells.emplace_back(std::string(noise_class_name(r.noise)));
  cells.emplace_back(r.noise_ratio);
  assert(cells.size() == std::size(kColumns));
  for (size_t i = 0; i < cells.size(); ++i)
    assert(std::holds_alternative<std::monostate>(cells[i]) || holds(cells[i], kColumns[i].type));
}

}  // namespace parity::report
