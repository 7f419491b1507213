// Helpers shared by the diagnosis rules.
#include "diagnosis/rule_util.h"

namespace parity::diagnosis_detail {

std::string row_summary(const CompareRow& row) {
  if (row.metrics) {
    const PairMetrics& m = *row.metrics;
    std::string s = fmt::format("cosine {}, rel_l2 {}, max_abs {}", num(m.cosine), num(m.rel_l2), num(m.max_abs));
    if (m.nonfinite_mismatch > 0) s += fmt::format(", {} non-finite mismatches", m.nonfinite_mismatch);
    return s + fmt::format(" ({})", units(row.noise_ratio));
  }
  if (row.stats) {
    const StatsDifferences s = stats_differences(row);
    return fmt::format("statistics: norm rel {}, max rel {}, min rel {} ({}; statistics only, weaker evidence)",
                       num(s.norm_rel), num(s.max_rel), num(s.min_rel), units(row.noise_ratio));
  }
  if (row.checksum_equal) return *row.checksum_equal ? "checksums equal" : "checksums differ";
  return row.reason;
}

const Suspect* top_source(const DiagnosisContext& ctx) {
  for (const Suspect& s : ctx.analysis->suspects)
    if (s.kind == SuspectKind::kSource) return &s;
  return nullptr;
}

bool born_from_dtype_extreme(const NanOrigin& o) {
  for (const ValueRange& in : o.inputs) {
    const FloatFormat* f = float_format(in.dtype);
    if (f != nullptr && (in.min == -f->max_finite || in.max == f->max_finite)) return true;
  }
  return false;
}

bool target_forward_nonfinite(const DiagnosisContext& ctx) {
  for (const NanOrigin& o : ctx.target_overflow->origins)
    if (!o.role_is_grad && o.direction != "backward" && !born_from_dtype_extreme(o)) return true;
  return false;
}

bool model_forward_differs(const DiagnosisContext& ctx) {
  for (const Suspect& s : ctx.analysis->suspects)
    if (s.direction != "backward" && s.module != "<global>") return true;
  return false;
}

bool is_param_grad_row(const CompareRow& row) {
  return row.golden->role == "grad" ||
         (row.golden->direction == "backward" && (row.golden->role == "parameter" || row.golden->role == "parameters"));
}

void append_limited(std::vector<std::string>& out, const std::vector<std::string>& items, size_t limit) {
  for (size_t i = 0; i < items.size() && i < limit; ++i) out.push_back(items[i]);
  if (items.size() > limit) out.push_back(fmt::format("... and {} more", items.size() - limit));
}

}  // namespace parity::diagnosis_detail
