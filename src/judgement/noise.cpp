// The rounding-noise model (docs/judgement.md): expected size of a pure rounding difference and the
// noise / elevated / structural classification of an observed relative error.
#include "parity/noise.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace parity {

double unit_roundoff(DType t) {
  const FloatFormat* f = float_format(t);
  if (f == nullptr) return 0.0;  // integers and bool are exact: any difference is structural
  return f->unit_roundoff;
}

double pair_unit_roundoff(DType a, DType b) { return std::max(unit_roundoff(a), unit_roundoff(b)); }

double expected_rounding_error(double u, int64_t reduction_length) {
  // u · sqrt(1 + log2 n): probabilistic error growth of blocked / pairwise summation (Higham & Mary
  // 2019). n ≤ 1 (elementwise or unknown) gives u: one rounding of the result.
  const double n = static_cast<double>(std::max<int64_t>(reduction_length, 1));
  return u * std::sqrt(1.0 + std::log2(n));
}

NoiseClass noise_class_of_ratio(double ratio, const NoiseParams& params) {
  if (std::isnan(ratio)) return NoiseClass::kUnknown;
  if (ratio <= params.noise_max) return NoiseClass::kNoise;
  if (ratio <= params.structural_min) return NoiseClass::kElevated;
  return NoiseClass::kStructural;
}

NoiseJudgement classify_noise(double observed, double u, int64_t reduction_length,
                              const NoiseParams& params) {
  NoiseJudgement j;
  j.observed = observed;
  j.expected = expected_rounding_error(u, reduction_length);
  if (std::isnan(observed)) return j;  // nothing measured: unknown
  if (observed == 0.0) {
    j.ratio = 0.0;
  } else if (j.expected == 0.0) {
    j.ratio = std::numeric_limits<double>::infinity();  // exact dtypes that differ
  } else {
    j.ratio = observed / j.expected;
  }
  j.cls = noise_class_of_ratio(j.ratio, params);
  return j;
}

double row_observed_error(const CompareRow& row) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  switch (row.mode) {
    case CompareMode::kTensor: {
      if (!row.metrics) return kNaN;
      const PairMetrics& m = *row.metrics;
      if (!m.nonfinite_agree || m.nonfinite_mismatch > 0) return kInf;
      if (m.compared == 0) return 0.0;  // every position non-finite on both sides, identically
      if (!std::isnan(m.rel_l2)) return m.rel_l2;
      // ‖g‖ = 0 with a nonzero difference: relative error is unbounded.
      return (m.euclidean > 0) ? kInf : kNaN;
    }
    case CompareMode::kStatistics: {
      if (!row.stats) return kNaN;
      const StatsComparison& s = *row.stats;
      if (s.golden.nan_count != s.target.nan_count || s.golden.inf_count != s.target.inf_count)
        return kInf;
      // A lower bound of rel_l2 = ‖t − g‖₂ / ‖g‖₂ from the statistics alone (docs/judgement.md
      // "Statistics mode"), with d = t − g:
      //   |‖t‖₂ − ‖g‖₂| ≤ ‖d‖₂                      (triangle inequality)
      //   |max t − max g|, |min t − min g| ≤ ‖d‖∞ ≤ ‖d‖₂
      //   √n · |mean t − mean g| = |Σd| / √n ≤ ‖d‖₂  (Cauchy–Schwarz)
      // Each difference is measured against ‖g‖₂, never against its own statistic (a Min near 0 would
      // turn any rounding into a huge "relative" change).
      const double g_norm = s.golden.l2norm;
      double bound = std::fabs(s.norm_diff);
      for (double v : {s.max_diff, s.min_diff}) if (!std::isnan(v)) bound = std::max(bound, std::fabs(v));
      const int64_t n = s.golden.numel > 0 ? s.golden.numel : s.target.numel;
      if (n > 0 && !std::isnan(s.mean_diff)) bound = std::max(bound, std::sqrt(static_cast<double>(n)) * std::fabs(s.mean_diff));
      if (std::isnan(bound) || std::isnan(g_norm)) return kNaN;
      if (g_norm == 0.0) return bound > 0 ? kInf : 0.0;
      return bound / g_norm;
    }
    case CompareMode::kChecksum:
      if (!row.checksum_equal) return kNaN;
      return *row.checksum_equal ? 0.0 : kNaN;  // unequal checksums say nothing about the size
    case CompareMode::kNone:
      return kNaN;
  }
  return kNaN;
}

}  // namespace parity
