#include "compare/judge.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <vector>

#include "parity/number_text.h"

namespace parity::compare {

std::string format_metric(double v) {
  char buf[64];
  if (std::isnan(v)) return std::string(kNoValueText);
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string format_cosine(double v) {
  if (std::isnan(v)) return std::string(kNoValueText);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}

namespace {

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string nonfinite_summary(const TensorStats& s) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%" PRId64 " NaN, %" PRId64 " +Inf, %" PRId64 " -Inf", s.nan_count,
                s.pinf_count, s.ninf_count);
  return buf;
}

}  // namespace

Judgement judge_tensor(const PairMetrics& m, const DTypeThresholds& th) {
  // msprobe: NaN/Inf positions that disagree make the row N/A with a message; parity calls it an error.
  if (!m.nonfinite_agree) {
    return {Verdict::kError, "NaN/Inf positions differ at " + std::to_string(m.nonfinite_mismatch) +
                                 " elements (golden " + nonfinite_summary(m.golden) + "; target " +
                                 nonfinite_summary(m.target) + ")"};
  }
  if (m.numel == 0) return {Verdict::kPass, "empty tensors"};
  if (m.compared == 0) {
    return {Verdict::kPass, "all " + std::to_string(m.numel) + " elements non-finite on both sides, in the same places"};
  }

  std::vector<std::string> fails, warns;
  const double cos = m.cosine;
  const bool has_cos = !std::isnan(cos);
  // One side all zero, the other not: cosine is undefined (msprobe: NaN), but the pair plainly differs.
  const bool g_zero = m.golden.l2norm == 0.0, t_zero = m.target.l2norm == 0.0;
  if (!has_cos && m.compared > 1 && g_zero != t_zero) {
    const std::string what = std::string(g_zero ? "golden" : "target") + " is all zero, " +
                             (g_zero ? "target" : "golden") + " is not (max abs " +
                             format_metric(m.max_abs) + ")";
    (m.max_abs > th.fail_min_abs ? fails : warns).push_back(what);
  }
  if (has_cos && cos < th.cosine_hard_fail) {
    fails.push_back("cosine " + format_cosine(cos) + " < " + format_cosine(th.cosine_hard_fail));
  } else if (has_cos && cos < th.cosine_fail && m.max_abs > th.fail_min_abs) {
    fails.push_back("cosine " + format_cosine(cos) + " < " + format_cosine(th.cosine_fail) +
                    " and max abs " + format_metric(m.max_abs) + " > " + format_metric(th.fail_min_abs));
  }
  if (m.max_abs > th.max_abs_fail) {
    fails.push_back("max abs " + format_metric(m.max_abs) + " > " + format_metric(th.max_abs_fail));
  }
  if (has_cos && cos < th.cosine_pass && fails.empty()) {
    warns.push_back("cosine " + format_cosine(cos) + " < " + format_cosine(th.cosine_pass));
  }
  if (m.kl_computed && !(m.kl < th.kl_pass)) {
    warns.push_back("KL " + format_metric(m.kl) + " >= " + format_metric(th.kl_pass));
  }
  if (m.rel_l2 > th.rel_l2_warn) {
    warns.push_back("rel L2 " + format_metric(m.rel_l2) + " > " + format_metric(th.rel_l2_warn));
  }
  if (m.max_rel > th.max_rel_warn) {
    warns.push_back("max rel " + format_metric(m.max_rel) + " > " + format_metric(th.max_rel_warn));
  }
  if (!fails.empty()) return {Verdict::kFail, join(fails)};
  if (!warns.empty()) return {Verdict::kWarn, join(warns)};

  std::vector<std::string> good;
  if (has_cos) {
    good.push_back("cosine " + format_cosine(cos));
  } else if (m.numel == 1) {
    good.push_back("single element (cosine unsupported)");
  }
  if (!std::isnan(m.rel_l2)) good.push_back("rel L2 " + format_metric(m.rel_l2));
  if (m.kl_computed) good.push_back("KL " + format_metric(m.kl));
  if (m.max_abs == 0.0) good = {"identical"};
  return {Verdict::kPass, join(good)};
}

namespace {

// msprobe statistics mode: relative error |t − g| / |g|; 0 when both are 0; NaN when g = 0 ≠ t.
// Both NaN (a statistic of a side with no finite element, e.g. an all-NaN tensor) agree: 0.
double stat_rel(double g, double t) {
  if (std::isnan(g) && std::isnan(t)) return 0.0;
  const double diff = t - g;
  if (diff == 0.0) return 0.0;
  if (g == 0.0) return kNaN;
  return std::fabs(diff) / std::fabs(g);
}

}  // namespace

StatsDifferences compare_stats(const TensorStats& golden, const TensorStats& target) {
  StatsDifferences s;
  s.max_diff = target.max - golden.max;
  s.min_diff = target.min - golden.min;
  s.mean_diff = target.mean - golden.mean;
  s.norm_diff = target.l2norm - golden.l2norm;
  s.max_rel = stat_rel(golden.max, target.max);
  s.min_rel = stat_rel(golden.min, target.min);
  s.mean_rel = stat_rel(golden.mean, target.mean);
  s.norm_rel = stat_rel(golden.l2norm, target.l2norm);
  s.worst_rel = 0.0;
  for (double r : {s.max_rel, s.min_rel, s.mean_rel, s.norm_rel}) {
    if (std::isnan(r) || std::isnan(s.worst_rel)) {
      s.worst_rel = kNaN;  // an unbounded relative error (golden 0, target not) is the worst
    } else if (r > s.worst_rel) {
      s.worst_rel = r;
    }
  }
  return s;
}

Judgement judge_stats(const TensorStats& golden, const TensorStats& target, const StatsDifferences& s,
                      const DTypeThresholds& th) {
  // Record shapes were checked before; this catches statistics that disagree with them. A writer that
  // left numel at 0 has not stated a count, which is not a disagreement.
  if (golden.numel > 0 && target.numel > 0 && golden.numel != target.numel) {
    return {Verdict::kError, "element counts differ: " + std::to_string(golden.numel) + " vs " +
                                 std::to_string(target.numel)};
  }
  std::vector<std::string> fails, warns;
  // msprobe highlights NaN/Inf in red: a changed count of non-finite values is a failure.
  if (golden.nan_count != target.nan_count) {
    fails.push_back("NaN count " + std::to_string(golden.nan_count) + " vs " + std::to_string(target.nan_count));
  }
  if (golden.inf_count != target.inf_count) {
    fails.push_back("Inf count " + std::to_string(golden.inf_count) + " vs " + std::to_string(target.inf_count));
  }
  struct Item { const char* name; double g, t, rel; };
  const Item items[] = {{"Max", golden.max, target.max, s.max_rel},
                        {"Min", golden.min, target.min, s.min_rel},
                        {"Mean", golden.mean, target.mean, s.mean_rel},
                        {"Norm", golden.l2norm, target.l2norm, s.norm_rel}};
  for (const Item& it : items) {
    if (std::isnan(it.rel)) {
      warns.push_back(std::string(it.name) + " " + format_metric(it.g) + " vs " + format_metric(it.t));
    } else if (it.rel > th.stats_rel_warn) {
      warns.push_back(std::string(it.name) + " rel err " + format_metric(it.rel) + " > " +
                      format_metric(th.stats_rel_warn));
    }
  }
  if (!fails.empty()) return {Verdict::kFail, join(fails)};
  if (!warns.empty()) return {Verdict::kWarn, join(warns)};
  return {Verdict::kPass, "statistics agree (worst rel err " + format_metric(s.worst_rel) + ")"};
}

Judgement judge_checksum(uint32_t golden, uint32_t target) {
  char buf[96];
  if (golden == target) {
    std::snprintf(buf, sizeof buf, "checksums equal (CRC32C %08x): bit-identical", golden);
    return {Verdict::kPass, buf};
  }
  std::snprintf(buf, sizeof buf, "checksums differ (CRC32C %08x vs %08x): not bit-identical", golden, target);
  return {Verdict::kFail, buf};
}

}  // namespace parity::compare
