// SeriesIndex: the series of a CurveRun by (metric, rank), for the comparisons that look every metric up
// (compare_curves, compare_ranks). CurveRun::find scans; over 20,000 metrics that was 3 s of string
// compares (issue 33 §5). The index sorts pointers once, so a run built by hand in any order works too.
#pragma once

#include <algorithm>
#include <span>
#include <string_view>
#include <vector>

#include "parity/curves.h"

namespace parity::curves::detail {

class SeriesIndex {
 public:
  explicit SeriesIndex(const CurveRun& run) {
    sorted_.reserve(run.series.size());
    for (const Series& s : run.series) sorted_.push_back(&s);
    std::stable_sort(sorted_.begin(), sorted_.end(), [](const Series* a, const Series* b) {
      return a->metric != b->metric ? a->metric < b->metric : a->rank < b->rank;
    });
  }

  // Every series of `metric`, by rank.
  std::span<const Series* const> of(std::string_view metric) const {
    const auto lo = std::lower_bound(sorted_.begin(), sorted_.end(), metric,
                                     [](const Series* s, std::string_view m) { return s->metric < m; });
    auto hi = lo;
    while (hi != sorted_.end() && (*hi)->metric == metric) ++hi;
    return {lo, hi};
  }

  // CurveRun::find's answer: `metric` for `rank`; for rank -1 the rank-less series, else the lowest rank's.
  const Series* find(std::string_view metric, int rank = -1) const {
    const std::span<const Series* const> all = of(metric);
    for (const Series* s : all)
      if (s->rank == rank) return s;
    return rank == -1 && !all.empty() ? all.front() : nullptr;
  }

 private:
  std::vector<const Series*> sorted_;
};

}  // namespace parity::curves::detail
