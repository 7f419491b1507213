// The statistics a statistics-mode row compared on each side (golden_stats / target_stats,
// parity/compare.h): computed from tensor data and held by the row, or stored in the side's record;
// and their differences, computed from them when read.
#include <cmath>

#include "compare/judge.h"
#include "parity/compare.h"

namespace parity {

const TensorStats& golden_stats(const CompareRow& row) {
  return row.stats->golden_computed ? *row.stats->golden_computed : *row.golden->stats;
}

const TensorStats& target_stats(const CompareRow& row) {
  return row.stats->target_computed ? *row.stats->target_computed : *row.target->stats;
}

TensorStats scale_stats(TensorStats stats, int log2) {
  for (double* v : {&stats.min, &stats.max, &stats.mean, &stats.l2norm, &stats.std, &stats.absmax})
    *v = std::ldexp(*v, log2);
  return stats;
}

StatsDifferences stats_differences(const CompareRow& row) {
  return compare::compare_stats(golden_stats(row), target_stats(row));
}

}  // namespace parity
