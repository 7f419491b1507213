// src/curves/ranks.cpp — rank consistency within one run (docs/curves.md "parity ranks"): at every
// step the median over the ranks is the reference; a rank that departs from it for `consecutive`
// steps is named with the step it started (RANK_INCONSISTENT).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "curves/series_index.h"
#include "parity/curves.h"

namespace parity::curves {

Result<RankComparison> compare_ranks(const CurveRun& run, const RankOptions& options) {
  RankComparison rc;
  rc.path = run.path;
  rc.format = run.format;
  rc.rel_tol = options.rel_tol;
  rc.consecutive = std::max(options.consecutive, 1);
  rc.problems = run.problems;
  rc.notes = run.notes;
  const detail::SeriesIndex series(run);
  std::vector<std::string> metrics;
  if (!options.metrics.empty()) {
    for (const auto& m : options.metrics) metrics.push_back(canonical_metric(m));
  } else {
    for (const auto& m : run.metrics())
      if (!is_performance_metric(m)) metrics.push_back(m);  // timing differs per rank by design
  }
  for (const std::string& metric : metrics) {
    std::vector<const Series*> per_rank;
    for (const Series* s : series.of(metric))
      if (s->rank >= 0) per_rank.push_back(s);
    if (per_rank.size() < 2) {
      if (!options.metrics.empty())
        return Status::Invalid(fmt::format("{}: metric '{}' is logged by {} rank(s); need at least two",
                                           run.path, metric, per_rank.size()));
      continue;
    }
    RankMetricResult r;
    r.metric = metric;
    // step → (rank → value)
    std::map<int64_t, std::map<int, double>> by_step;
    for (const Series* s : per_rank) {
      r.ranks.push_back(s->rank);
      for (size_t i = 0; i < s->steps.size(); ++i) by_step[s->steps[i]][s->rank] = s->values[i];
    }
    struct State { int run = 0; int64_t run_start = -1; RankDeviation dev; bool named = false; };
    std::map<int, State> state;
    for (int rank : r.ranks) state[rank].dev.rank = rank;
    for (const auto& [step, values] : by_step) {
      for (int rank : r.ranks)
        if (!values.count(rank)) r.missing_steps[rank].push_back(step);
      if (values.size() < 2) continue;
      ++r.steps_compared;
      std::vector<double> finite;
      for (const auto& [rank, v] : values)
        if (std::isfinite(v)) finite.push_back(v);
      // Reference: the median of the finite values (the majority of replicas), NaN if none is finite.
      double med = kNaN;
      if (!finite.empty()) {
        std::sort(finite.begin(), finite.end());
        size_t n = finite.size();
        med = n % 2 ? finite[n / 2] : 0.5 * (finite[n / 2 - 1] + finite[n / 2]);
      }
      // Ties favour the finite values: with two ranks, the one that went NaN is the odd one.
      bool majority_finite = finite.size() * 2 >= values.size();
      for (const auto& [rank, v] : values) {
        State& st = state[rank];
        // A finite value disagrees when it is off the median or when most replicas are non-finite;
        // a non-finite value disagrees when most replicas are finite.
        double dev = std::numeric_limits<double>::infinity();
        bool disagree;
        if (std::isfinite(v)) {
          if (std::isfinite(med)) dev = std::fabs(v - med) / std::max(std::fabs(med), options.rel_floor);
          disagree = !majority_finite || dev > options.rel_tol;
        } else {
          disagree = majority_finite;
        }
        if (!disagree) { st.run = 0; continue; }
        ++st.dev.steps;
        if (dev > st.dev.max_rel_dev || st.dev.max_rel_dev_step < 0) {
          st.dev.max_rel_dev = dev;
          st.dev.max_rel_dev_step = step;
        }
        if (st.run++ == 0) st.run_start = step;
        if (!st.named && st.run >= std::max(options.consecutive, 1)) {
          st.named = true;
          st.dev.from_step = st.run_start;
        }
      }
    }
    for (auto& [rank, st] : state)
      if (st.named) r.inconsistent.push_back(st.dev);
    r.verdict = r.inconsistent.empty() ? (r.missing_steps.empty() ? Verdict::kPass : Verdict::kWarn)
                                       : Verdict::kFail;
    rc.metrics.push_back(std::move(r));
  }
  if (rc.metrics.empty())
    return Status::Invalid(fmt::format("{}: no metric is logged by two or more ranks (ranks found: {})", run.path,
                                       fmt::join(run.ranks(), ", ")));
  Verdict v = Verdict::kPass;
  for (const auto& m : rc.metrics) {
    v = std::max(v, m.verdict);
    if (!m.inconsistent.empty()) rc.rank_inconsistent = true;
  }
  if (!rc.problems.empty() && v == Verdict::kPass) v = Verdict::kWarn;
  rc.verdict = v;
  return rc;
}

}  // namespace parity::curves
