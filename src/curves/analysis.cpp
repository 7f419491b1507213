// src/curves/analysis.cpp — golden-vs-target comparison of one metric's curve: alignment, relative
// deviation, divergence step, NaN/Inf steps, spikes, final/best values, area, trend, verdict.
// Every definition and default is in docs/curves.md ("Analysis of one metric").
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "curves/series_index.h"
#include "parity/curves.h"

namespace parity::curves {

namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// "a, b, c, … and 19,997 more": names in a message, at most `shown` of them (a log of 20,000 metrics
// would otherwise be a message of 200 KB).
std::string name_list(const std::vector<std::string>& names, size_t shown = 12) {
  if (names.size() <= shown) return fmt::format("{}", fmt::join(names, ", "));
  return fmt::format("{}, … and {} more", fmt::join(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
                     names.size() - shown);
}

bool higher_is_better(std::string_view m) {
  return contains(m, "acc") || contains(m, "throughput") || contains(m, "per_sec") ||
         contains(m, "per_second") || contains(m, "tflops") || contains(m, "bleu") || contains(m, "f1") ||
         contains(m, "score") || contains(m, "exact_match");
}

// RMS of the finite values: the size of a series, the yardstick for golden values near zero.
double rms_of(const std::vector<double>& v) {
  double ss = 0;
  size_t n = 0;
  for (double x : v)
    if (std::isfinite(x)) { ss += x * x; ++n; }
  return n ? std::sqrt(ss / n) : 0.0;
}

// The denominator of a relative difference against golden value g: |g|, but never below
// rel_scale_floor · (size of the golden series) — a golden value that crosses zero (a metric
// oscillating around 0, a counter at its start) would otherwise turn a tiny absolute difference into
// an enormous relative one. When the whole golden series is zero, |t| is the yardstick (any non-zero
// target is 100 % off).
double rel_denominator(double g, double t, double golden_scale, const CurveOptions& o) {
  double d = std::max(std::fabs(g), o.rel_scale_floor * golden_scale);
  if (d == 0) d = std::fabs(t);
  return std::max(d, o.rel_floor);
}

// Equal values (including NaN vs NaN and the same infinity) deviate by 0; a finite/non-finite pair by
// +inf; otherwise |t − g| / rel_denominator.
double rel_dev(double g, double t, double golden_scale, const CurveOptions& o) {
  if (g == t || (std::isnan(g) && std::isnan(t))) return 0.0;
  if (!std::isfinite(g) || !std::isfinite(t)) return std::numeric_limits<double>::infinity();
  return std::fabs(t - g) / rel_denominator(g, t, golden_scale, o);
}

double median_of(std::vector<double> v) {
  const size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + n / 2, v.end());
  double hi = v[n / 2];
  if (n % 2 == 1) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + n / 2);
  return 0.5 * (lo + hi);
}

// Least-squares slope of y against x.
double ls_slope(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  if (n < 2) return kNaN;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) { mx += x[i]; my += y[i]; }
  mx /= n; my /= n;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; ++i) { sxy += (x[i] - mx) * (y[i] - my); sxx += (x[i] - mx) * (x[i] - mx); }
  return sxx > 0 ? sxy / sxx : kNaN;
}

std::string steps_text(const std::vector<int64_t>& steps) {
  if (steps.size() <= 5) return fmt::format("{}", fmt::join(steps, ", "));
  return fmt::format("{}, {}, {}, ... ({} steps)", steps[0], steps[1], steps[2], steps.size());
}

bool above_tolerance(const AlignedPoint& p, const Tolerance& tol) {
  const bool gf = std::isfinite(p.golden), tf = std::isfinite(p.target);
  return (gf && tf) ? p.rel_dev > tol.rel_tol : (gf != tf);
}

// Steady divergence or spikes (docs/curves.md): a run that parted from the golden and stays apart
// (an optimiser or precision bug compounding through the updates) against isolated bad steps (one
// bad batch, an overflow that the loss scaler skipped) that the curve recovers from.
void classify_deviation(MetricComparison& mc, const Tolerance& tol, const CurveOptions& options) {
  std::vector<int64_t> above;
  for (const auto& p : mc.points)
    if (above_tolerance(p, tol)) above.push_back(p.step);
  mc.steps_above_tol = static_cast<int64_t>(above.size());
  if (above.empty()) return;
  if (!mc.divergence_step) {
    mc.deviation_kind = "spikes";
    mc.spike_steps_above_tol = above;
    return;
  }
  int64_t after = 0, above_after = 0;
  for (const auto& p : mc.points) {
    if (p.step < *mc.divergence_step) continue;
    ++after;
    above_after += above_tolerance(p, tol);
  }
  mc.fraction_above_after_divergence = static_cast<double>(above_after) / static_cast<double>(after);
  mc.deviation_kind = mc.fraction_above_after_divergence >= options.steady_fraction ? "steady" : "transient";
}

}  // namespace

Tolerance default_tolerance(std::string_view metric) {
  if (metric == "lr" || metric == "loss_scale") return {1e-6, 1, 1e-6};
  if (metric == "grad_norm") return {0.10, 5, 0.10};
  if (contains(metric, "loss")) return {0.02, 5, 0.01};
  return {0.05, 5, 0.05};
}

std::vector<Spike> find_spikes(const std::vector<int64_t>& steps, const std::vector<double>& values,
                               int window, double k) {
  std::vector<Spike> spikes;
  std::vector<double> prev;  // the previous finite values, most recent last
  constexpr size_t kMinHistory = 5;
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (!std::isfinite(v)) continue;
    if (prev.size() >= kMinHistory) {
      size_t from = prev.size() > static_cast<size_t>(window) ? prev.size() - window : 0;
      std::vector<double> w(prev.begin() + from, prev.end());
      double med = median_of(w);
      std::vector<double> dev(w.size());
      for (size_t j = 0; j < w.size(); ++j) dev[j] = std::fabs(w[j] - med);
      double mad = median_of(dev);
      // 1.4826·MAD estimates the standard deviation of normal noise.
      double threshold = med + k * 1.4826 * mad;
      if (v > threshold) spikes.push_back({steps[i], v, med, threshold});
    }
    prev.push_back(v);
  }
  return spikes;
}

namespace {

// The points logged by both runs, the steps logged by one only, and each side's non-finite steps (both
// step lists are strictly increasing).
void align_series(const Series& golden, const Series& target, double golden_scale, const CurveOptions& options,
                  MetricComparison& mc) {
  size_t i = 0, j = 0;
  while (i < golden.steps.size() || j < target.steps.size()) {
    if (j == target.steps.size() || (i < golden.steps.size() && golden.steps[i] < target.steps[j])) {
      mc.missing_in_target.push_back(golden.steps[i++]);
    } else if (i == golden.steps.size() || target.steps[j] < golden.steps[i]) {
      mc.missing_in_golden.push_back(target.steps[j++]);
    } else {
      AlignedPoint p;
      p.step = golden.steps[i];
      p.golden = golden.values[i++];
      p.target = target.values[j++];
      p.abs_diff = p.target - p.golden;
      p.rel_dev = rel_dev(p.golden, p.target, golden_scale, options);
      mc.points.push_back(p);
    }
  }
  for (size_t s = 0; s < golden.values.size(); ++s)
    if (!std::isfinite(golden.values[s])) mc.nonfinite_golden.push_back(golden.steps[s]);
  for (size_t s = 0; s < target.values.size(); ++s)
    if (!std::isfinite(target.values[s])) mc.nonfinite_target.push_back(target.steps[s]);
}

// Overall deviation over the points finite on both sides.
void overall_deviation(const std::vector<const AlignedPoint*>& finite, MetricComparison& mc) {
  if (finite.empty()) return;
  double sum_rel = 0, sum_abs = 0;
  mc.max_rel_dev = -1;
  mc.max_abs_diff = 0;
  for (const AlignedPoint* p : finite) {
    sum_rel += p->rel_dev;
    sum_abs += std::fabs(p->abs_diff);
    if (p->rel_dev > mc.max_rel_dev) { mc.max_rel_dev = p->rel_dev; mc.max_rel_dev_step = p->step; }
    mc.max_abs_diff = std::max(mc.max_abs_diff, std::fabs(p->abs_diff));
  }
  mc.mean_rel_dev = sum_rel / finite.size();
  mc.mean_abs_diff = sum_abs / finite.size();
}

// Mean and max relative deviation in `windows` equal stretches of the aligned points.
void deviation_windows(const CurveOptions& options, MetricComparison& mc) {
  const size_t n = mc.points.size();
  const size_t nw = std::min<size_t>(std::max(options.windows, 1), n);
  for (size_t w = 0; w < nw; ++w) {
    size_t a = w * n / nw, b = (w + 1) * n / nw;
    Window win;
    win.first_step = mc.points[a].step;
    win.last_step = mc.points[b - 1].step;
    win.points = static_cast<int64_t>(b - a);
    int64_t cnt = 0;
    for (size_t q = a; q < b; ++q) {
      const auto& p = mc.points[q];
      if (!std::isfinite(p.golden) || !std::isfinite(p.target)) continue;
      win.mean_rel_dev += p.rel_dev;
      win.max_rel_dev = std::max(win.max_rel_dev, p.rel_dev);
      ++cnt;
    }
    win.mean_rel_dev = cnt ? win.mean_rel_dev / cnt : kNaN;
    if (!cnt) win.max_rel_dev = kNaN;
    mc.windows.push_back(win);
  }
}

// Divergence: rel_dev above tolerance for `consecutive` aligned steps in a row; a non-finite value on
// one side only counts as above.
void find_divergence(const Tolerance& tol, MetricComparison& mc) {
  int run = 0;
  for (size_t q = 0; q < mc.points.size(); ++q) {
    const auto& p = mc.points[q];
    bool gf = std::isfinite(p.golden), tf = std::isfinite(p.target);
    bool above = (gf && tf) ? p.rel_dev > tol.rel_tol : (gf != tf);
    run = above ? run + 1 : 0;
    if (run >= std::max(tol.consecutive, 1)) {
      mc.divergence_step = mc.points[q + 1 - run].step;
      return;
    }
  }
}

// Final value: mean of the last final_window points finite on both sides.
void final_values(const std::vector<const AlignedPoint*>& finite, double golden_scale, const CurveOptions& options,
                  MetricComparison& mc) {
  size_t fw = options.final_window > 0 ? static_cast<size_t>(options.final_window)
                                       : std::clamp<size_t>(finite.size() / 20, 1, 10);
  fw = std::min(fw, finite.size());
  mc.final_window = static_cast<int>(fw);
  if (fw == 0) return;
  double sg = 0, st = 0;
  for (size_t q = finite.size() - fw; q < finite.size(); ++q) { sg += finite[q]->golden; st += finite[q]->target; }
  mc.final_golden = sg / fw;
  mc.final_target = st / fw;
  mc.final_abs_diff = mc.final_target - mc.final_golden;
  mc.final_rel_diff = mc.final_abs_diff == 0 ? 0.0
                      : std::fabs(mc.final_abs_diff) /
                            rel_denominator(mc.final_golden, mc.final_target, golden_scale, options);
}

// Best value of each side over its whole finite series.
void best_values(const Series& golden, const Series& target, double golden_scale, const CurveOptions& options,
                 MetricComparison& mc) {
  auto best_of = [&](const Series& s, double& value, int64_t& step) {
    for (size_t q = 0; q < s.values.size(); ++q) {
      double v = s.values[q];
      if (!std::isfinite(v)) continue;
      bool better = step < 0 || (mc.best_mode == "min" ? v < value : v > value);
      if (better) { value = v; step = s.steps[q]; }
    }
  };
  best_of(golden, mc.best_golden, mc.best_golden_step);
  best_of(target, mc.best_target, mc.best_target_step);
  if (mc.best_golden_step >= 0 && mc.best_target_step >= 0) {
    mc.best_abs_diff = mc.best_target - mc.best_golden;
    mc.best_rel_diff = mc.best_abs_diff == 0 ? 0.0
                       : std::fabs(mc.best_abs_diff) /
                             rel_denominator(mc.best_golden, mc.best_target, golden_scale, options);
  }
}

// Area between the curves (trapezoid rule in step units).
void area_between(const std::vector<const AlignedPoint*>& finite, MetricComparison& mc) {
  if (finite.size() < 2) return;
  mc.area_between = 0;
  mc.area_golden = 0;
  for (size_t q = 1; q < finite.size(); ++q) {
    double h = static_cast<double>(finite[q]->step - finite[q - 1]->step);
    mc.area_between += h * 0.5 * (std::fabs(finite[q]->abs_diff) + std::fabs(finite[q - 1]->abs_diff));
    mc.area_golden += h * 0.5 * (std::fabs(finite[q]->golden) + std::fabs(finite[q - 1]->golden));
  }
  mc.rel_area = mc.area_golden > 0 ? mc.area_between / mc.area_golden : kNaN;
}

// Trend: least-squares slopes; "flat" when the fitted change over the span is within rel_tol of the
// mean level.
void trend(const std::vector<const AlignedPoint*>& finite, const Tolerance& tol, const CurveOptions& options,
           MetricComparison& mc) {
  if (finite.size() < 2) return;
  std::vector<double> x, yg, yt;
  for (const AlignedPoint* p : finite) { x.push_back(static_cast<double>(p->step)); yg.push_back(p->golden); yt.push_back(p->target); }
  mc.slope_golden = ls_slope(x, yg);
  mc.slope_target = ls_slope(x, yt);
  double span = x.back() - x.front();
  double mean_g = 0;
  for (double v : yg) mean_g += v;
  mean_g /= yg.size();
  double flat = tol.rel_tol * std::max(std::fabs(mean_g), options.rel_floor);
  bool g_flat = std::fabs(mc.slope_golden * span) <= flat;
  bool t_flat = std::fabs(mc.slope_target * span) <= flat;
  if (g_flat || t_flat) mc.trend_consistent = g_flat && t_flat;
  else mc.trend_consistent = (mc.slope_golden > 0) == (mc.slope_target > 0);
}

// The steps of aligned points where `keep(golden finite, target finite)` holds.
template <typename Keep>
std::vector<int64_t> steps_where(const MetricComparison& mc, Keep keep) {
  std::vector<int64_t> steps;
  for (const auto& p : mc.points)
    if (keep(std::isfinite(p.golden), std::isfinite(p.target))) steps.push_back(p.step);
  return steps;
}

// A verdict and the reasons behind it, each reason raising the verdict to at least its own.
struct Judged {
  MetricComparison& mc;
  Verdict v = Verdict::kPass;
  void worse(Verdict w, std::string reason) {
    if (static_cast<int>(w) > static_cast<int>(v)) v = w;
    mc.reasons.push_back(std::move(reason));
  }
};

// Failing reasons (seed 004: the trend must agree and the final value be within tolerance).
void judge_final_and_trend(const Tolerance& tol, Judged& j) {
  MetricComparison& mc = j.mc;
  const auto target_only_nonfinite = steps_where(mc, [](bool gf, bool tf) { return gf && !tf; });
  if (!target_only_nonfinite.empty())
    j.worse(Verdict::kFail, fmt::format("target is NaN/Inf where the golden is finite, first at step {} ({} step(s))",
                                        target_only_nonfinite.front(), target_only_nonfinite.size()));
  if (std::isnan(mc.final_rel_diff))
    j.worse(Verdict::kFail, "no step where both values are finite: no final value to compare");
  else if (mc.final_rel_diff > tol.final_tol)
    j.worse(Verdict::kFail, fmt::format("final value {:.6g} vs golden {:.6g}: relative difference {:.3g} > {:.3g} "
                                        "(mean of the last {} point(s))",
                                        mc.final_target, mc.final_golden, mc.final_rel_diff, tol.final_tol,
                                        mc.final_window));
  if (!mc.trend_consistent)
    j.worse(Verdict::kFail, fmt::format("trend differs: least-squares slope {:.3g} (target) vs {:.3g} (golden)",
                                        mc.slope_target, mc.slope_golden));
}

// Warning reasons: the kind of deviation, target-only spikes, one-sided NaN/Inf and steps.
void judge_deviation(const Tolerance& tol, Judged& j) {
  MetricComparison& mc = j.mc;
  if (mc.deviation_kind == "steady")
    j.worse(Verdict::kWarn, fmt::format("steady divergence from step {}: relative deviation above {:.3g} for {} "
                                        "consecutive step(s), and at {:.0f} % of the steps from there on",
                                        *mc.divergence_step, tol.rel_tol, tol.consecutive,
                                        100 * mc.fraction_above_after_divergence));
  else if (mc.deviation_kind == "transient")
    j.worse(Verdict::kWarn, fmt::format("diverges from step {} (relative deviation above {:.3g} for {} consecutive "
                                        "step(s)) and comes back: above it at {:.0f} % of the steps from there on",
                                        *mc.divergence_step, tol.rel_tol, tol.consecutive,
                                        100 * mc.fraction_above_after_divergence));
  else if (mc.deviation_kind == "spikes")
    mc.reasons.push_back(fmt::format("spikes, not a divergence: {} isolated step(s) above {:.3g} ({}), never {} in "
                                     "a row", mc.steps_above_tol, tol.rel_tol, steps_text(mc.spike_steps_above_tol),
                                     tol.consecutive));
  std::set<int64_t> golden_spike_steps;
  for (const auto& s : mc.spikes_golden) golden_spike_steps.insert(s.step);
  std::vector<int64_t> target_only_spikes;
  for (const auto& s : mc.spikes_target)
    if (!golden_spike_steps.count(s.step)) target_only_spikes.push_back(s.step);
  if (!target_only_spikes.empty())
    j.worse(Verdict::kWarn, fmt::format("target-only spike(s) at step {}", steps_text(target_only_spikes)));
  const auto golden_only_nonfinite = steps_where(mc, [](bool gf, bool tf) { return !gf && tf; });
  if (!golden_only_nonfinite.empty())
    j.worse(Verdict::kWarn, fmt::format("the golden is NaN/Inf where the target is finite, at step {}",
                                        steps_text(golden_only_nonfinite)));
  if (!mc.missing_in_golden.empty())
    j.worse(Verdict::kWarn, fmt::format("steps logged only by the target: {}", steps_text(mc.missing_in_golden)));
  if (!mc.missing_in_target.empty())
    j.worse(Verdict::kWarn, fmt::format("steps logged only by the golden: {}", steps_text(mc.missing_in_target)));
}

}  // namespace

MetricComparison compare_series(const Series& golden, const Series& target, const Tolerance& tol,
                                const CurveOptions& options) {
  MetricComparison mc;
  mc.metric = golden.metric;
  mc.tolerance = tol;
  mc.best_mode = higher_is_better(golden.metric) ? "max" : "min";
  const double golden_scale = rms_of(golden.values);
  align_series(golden, target, golden_scale, options, mc);
  if (mc.points.empty()) {
    mc.verdict = Verdict::kFail;
    mc.reasons.push_back("no step is logged by both runs");
    return mc;
  }
  std::vector<const AlignedPoint*> finite;  // points finite on both sides (mc.points is final here)
  for (const auto& p : mc.points)
    if (std::isfinite(p.golden) && std::isfinite(p.target)) finite.push_back(&p);
  overall_deviation(finite, mc);
  deviation_windows(options, mc);
  find_divergence(tol, mc);
  classify_deviation(mc, tol, options);
  mc.spikes_golden = find_spikes(golden.steps, golden.values, options.spike_window, options.spike_k);
  mc.spikes_target = find_spikes(target.steps, target.values, options.spike_window, options.spike_k);
  final_values(finite, golden_scale, options, mc);
  best_values(golden, target, golden_scale, options, mc);
  area_between(finite, mc);
  trend(finite, tol, options, mc);

  Judged j{mc};
  judge_final_and_trend(tol, j);
  judge_deviation(tol, j);
  if (j.v == Verdict::kPass)
    mc.reasons.push_back(fmt::format("trend consistent; final within {:.3g} (relative difference {:.3g})",
                                     tol.final_tol, mc.final_rel_diff));
  mc.verdict = j.v;
  return mc;
}

Result<CurveComparison> compare_curves(const CurveRun& golden, const CurveRun& target,
                                       const CurveOptions& options) {
  CurveComparison c;
  c.golden_path = golden.path;
  c.golden_format = golden.format;
  c.target_path = target.path;
  c.target_format = target.format;
  c.problems = golden.problems;
  c.problems.insert(c.problems.end(), target.problems.begin(), target.problems.end());
  c.notes = golden.notes;
  c.notes.insert(c.notes.end(), target.notes.begin(), target.notes.end());
  std::vector<std::string> gm = golden.metrics(), tm = target.metrics();
  const detail::SeriesIndex golden_series(golden), target_series(target);
  std::vector<std::string> selected;
  if (!options.metrics.empty()) {
    for (const std::string& raw : options.metrics) {
      std::string m = canonical_metric(raw);
      bool in_g = std::binary_search(gm.begin(), gm.end(), m);  // metrics(): sorted
      bool in_t = std::binary_search(tm.begin(), tm.end(), m);
      if (!in_g && !in_t)
        return Status::Invalid(fmt::format("metric '{}' is in neither run (golden has: {}; target has: {})", raw,
                                           name_list(gm), name_list(tm)));
      if (!in_t) c.only_golden.push_back(m);
      else if (!in_g) c.only_target.push_back(m);
      else selected.push_back(m);
    }
  } else {
    auto counter = [&](const std::string& m) {
      if (options.counters) return false;
      const Series* g = golden_series.find(m, options.rank);
      const Series* t = target_series.find(m, options.rank);
      return (g && is_counter_metric(*g)) || (t && is_counter_metric(*t));
    };
    for (const auto& m : gm) {
      if (is_performance_metric(m)) continue;
      const bool shared = std::binary_search(tm.begin(), tm.end(), m);
      if (counter(m)) {
        if (shared) c.counters_skipped.push_back(m);
        continue;
      }
      if (shared) selected.push_back(m);
      else c.only_golden.push_back(m);
    }
    for (const auto& m : tm)
      if (!is_performance_metric(m) && !std::binary_search(gm.begin(), gm.end(), m) && !counter(m))
        c.only_target.push_back(m);
  }
  if (selected.empty())
    return Status::Invalid(fmt::format("no metric in common (golden: {}; target: {}){}", name_list(gm), name_list(tm),
                                       c.counters_skipped.empty() ? std::string()
                                           : fmt::format("; counters left out: {} (compare them with --counters)",
                                                         name_list(c.counters_skipped))));
  for (const std::string& m : selected) {
    const Series* g = golden_series.find(m, options.rank);
    const Series* t = target_series.find(m, options.rank);
    if (!g || !t) {
      (g ? c.only_golden : c.only_target).push_back(m);
      continue;
    }
    auto it = options.tolerances.find(m);
    Tolerance tol = it != options.tolerances.end() ? it->second : default_tolerance(m);
    c.metrics.push_back(compare_series(*g, *t, tol, options));
  }
  Verdict v = Verdict::kPass;
  for (const auto& m : c.metrics) v = std::max(v, m.verdict);
  if ((!c.problems.empty() || !c.only_golden.empty() || !c.only_target.empty()) && v == Verdict::kPass)
    v = Verdict::kWarn;
  c.verdict = v;
  return c;
}

}  // namespace parity::curves
