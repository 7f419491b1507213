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
      const StatsComparison& s = *row.stats;
      if (s.golden.nan_count != s.target.nan_count || s.golden.inf_count != s.target.inf_count)
        return kInf;
      // norm: |‖t‖ − ‖g‖| ≤ ‖t − g‖, so norm_rel is a lower bound of rel_l2; max/min relative
      // differences bound the extreme elements. Mean is excluded: it cancels (a mean near 0 makes any
      // rounding difference look huge).
      double worst = kNaN;
      for (double v : {s.norm_rel, s.max_rel, s.min_rel}) {
        if (std::isnan(v)) continue;
        worst = std::isnan(worst) ? v : std::max(worst, v);
      }
      return worst;
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
