// The observed relative error of a compared row (row_observed_error, parity/compare.h): what the
// rounding-noise model of parity/noise.h classifies (docs/judgement.md).
#include <algorithm>
#include <cmath>
#include <limits>

#include "parity/compare.h"

namespace parity {

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
      const StatsDifferences s = stats_differences(row);
      const TensorStats &golden = golden_stats(row), &target = target_stats(row);
      if (golden.nan_count != target.nan_count || golden.inf_count != target.inf_count)
        return kInf;
      // A lower bound of rel_l2 = ‖t − g‖₂ / ‖g‖₂ from the statistics alone (docs/judgement.md
      // "Statistics mode"), with d = t − g:
      //   |‖t‖₂ − ‖g‖₂| ≤ ‖d‖₂                      (triangle inequality)
      //   |max t − max g|, |min t − min g| ≤ ‖d‖∞ ≤ ‖d‖₂
      //   √n · |mean t − mean g| = |Σd| / √n ≤ ‖d‖₂  (Cauchy–Schwarz)
      // Each difference is measured against ‖g‖₂, never against its own statistic (a Min near 0 would
      // turn any rounding into a huge "relative" change).
      const double g_norm = golden.l2norm;
      double bound = std::fabs(s.norm_diff);
      for (double v : {s.max_diff, s.min_diff}) if (!std::isnan(v)) bound = std::max(bound, std::fabs(v));
      const int64_t n = golden.numel > 0 ? golden.numel : target.numel;
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
