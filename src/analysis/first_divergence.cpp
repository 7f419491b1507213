// first_divergence: the first failing row in execution order (forward before backward, per step and
// rank). "First" is what a user reads top-down; the cause is usually upstream of it (see suspects).
#include <algorithm>
#include <tuple>

#include "analysis/event_index.h"
#include "parity/analysis.h"

namespace parity {

std::optional<FirstDivergence> first_divergence(const CompareResult& result) {
  std::optional<size_t> best;
  auto key = [&](size_t i) {
    const Record& r = *result.rows[i].golden;
    return std::make_tuple(r.rank, r.step, analysis_detail::direction_rank(r.direction), r.order, i);
  };
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const Verdict v = result.rows[i].verdict;
    if (v != Verdict::kFail && v != Verdict::kError) continue;
    if (!best || key(i) < key(*best)) best = i;
  }
  if (!best) return std::nullopt;
  const CompareRow& row = result.rows[*best];
  FirstDivergence f;
  f.row = *best;
  f.name = row.golden->name;
  analysis_detail::set_event_identity(f, *row.golden);
  f.role = row.golden->role;
  f.verdict = row.verdict;
  f.reason = row.reason;
  f.noise = row.noise;
  f.noise_ratio = row.noise_ratio;
  return f;
}

}  // namespace parity
