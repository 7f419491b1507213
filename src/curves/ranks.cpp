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

namespace {

// The metrics to check: those asked for, else every logged one but timings (they differ per rank by design).
std::vector<std::string> metrics_to_check(const CurveRun& run, const RankOptions& options) {
  std::vector<std::string> metrics;
  if (!options.metrics.empty()) {
    for (const auto& m : options.metrics) metrics.push_back(canonical_metric(m));
  } else {
    for (const auto& m : run.metrics())
      if (!is_performance_metric(m)) metrics.push_back(m);
  }
  return metrics;
}

// Reference: the median of the finite values (the majority of replicas), NaN if none is finite; and whether
// most replicas are finite (ties favour the finite values: with two ranks, the one that went NaN is the
// odd one).
std::pair<double, bool> reference_of(const std::map<int, double>& values) {
  std::vector<double> finite;
  for (const auto& [rank, v] : values)
    if (std::isfinite(v)) finite.push_back(v);
  double med = kNaN;
  if (!finite.empty()) {
    std::sort(finite.begin(), finite.end());
    size_t n = finite.size();
    med = n % 2 ? finite[n / 2] : 0.5 * (finite[n / 2 - 1] + finite[n / 2]);
  }
  return {med, finite.size() * 2 >= values.size()};
}

// One rank's departures from the reference, step after step: named once it departs `consecutive` steps
// in a row, from the step that run started.
struct RankTrack {
  int run = 0;
  int64_t run_start = -1;
  RankDeviation dev;
  bool named = false;

  // A finite value disagrees when it is off the median or when most replicas are non-finite; a
  // non-finite value disagrees when most replicas are finite.
  void observe(int64_t step, double v, double med, bool majority_finite, const RankOptions& options) {
    double deviation = std::numeric_limits<double>::infinity();
    bool disagree;
    if (std::isfinite(v)) {
      if (std::isfinite(med)) deviation = std::fabs(v - med) / std::max(std::fabs(med), options.rel_floor);
      disagree = !majority_finite || deviation > options.rel_tol;
    } else {
      disagree = majority_finite;
    }
    if (!disagree) {
      run = 0;
      return;
    }
    ++dev.steps;
    if (deviation > dev.max_rel_dev || dev.max_rel_dev_step < 0) {
      dev.max_rel_dev = deviation;
      dev.max_rel_dev_step = step;
    }
    if (run++ == 0) run_start = step;
    if (!named && run >= std::max(options.consecutive, 1)) {
      named = true;
      dev.from_step = run_start;
    }
  }
};

// One metric's ranks against their median, step by step.
RankMetricResult check_metric(const std::string& metric, const std::vector<const Series*>& per_rank,
                              const RankOptions& options) {
  RankMetricResult r;
  r.metric = metric;
  std::map<int64_t, std::map<int, double>> by_step;  // step → (rank → value)
  for (const Series* s : per_rank) {
    r.ranks.push_back(s->rank);
    for (size_t i = 0; i < s->steps.size(); ++i) by_step[s->steps[i]][s->rank] = s->values[i];
  }
  std::map<int, RankTrack> tracks;
  for (int rank : r.ranks) tracks[rank].dev.rank = rank;
  for (const auto& [step, values] : by_step) {
    for (int rank : r.ranks)
      if (!values.count(rank)) r.missing_steps[rank].push_back(step);
    if (values.size() < 2) continue;
    ++r.steps_compared;
    const auto [med, majority_finite] = reference_of(values);
    for (const auto& [rank, v] : values) tracks[rank].observe(step, v, med, majority_finite, options);
  }
  for (auto& [rank, track] : tracks)
    if (track.named) r.inconsistent.push_back(track.dev);
  r.verdict = r.inconsistent.empty() ? (r.missing_steps.empty() ? Verdict::kPass : Verdict::kWarn) : Verdict::kFail;
  return r;
}

}  // namespace

Result<RankComparison> compare_ranks(const CurveRun& run, const RankOptions& options) {
  RankComparison rc;
  rc.path = run.path;
  rc.format = run.format;
  rc.rel_tol = options.rel_tol;
  rc.consecutive = std::max(options.consecutive, 1);
  rc.problems = run.problems;
  rc.notes = run.notes;
  const detail::SeriesIndex series(run);
  for (const std::string& metric : metrics_to_check(run, options)) {
    std::vector<const Series*> per_rank;
    for (const Series* s : series.of(metric))
      if (s->rank >= 0) per_rank.push_back(s);
    if (per_rank.size() < 2) {
      if (!options.metrics.empty())
        return Status::Invalid(fmt::format("{}: metric '{}' is logged by {} rank(s); need at least two",
                                           run.path, metric, per_rank.size()));
      continue;
    }
    rc.metrics.push_back(check_metric(metric, per_rank, options));
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
