// Curve analysis on synthetic curves with known answers: divergence step, spikes, NaN steps,
// missing steps, final/best values, area, verdicts; rank consistency; JSON/CSV schema.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "parity/csv_cell.h"
#include "parity/curves.h"

using namespace parity::curves;
using parity::Verdict;

namespace {

// A decaying loss 5·exp(−step/40) + 1 with a small deterministic wiggle.
Series loss_curve(int n, double scale = 1.0) {
  Series s;
  s.metric = "loss";
  for (int i = 0; i < n; ++i) {
    s.steps.push_back(i);
    s.values.push_back(scale * (5.0 * std::exp(-i / 40.0) + 1.0 + 0.002 * std::sin(i * 1.7)));
  }
  return s;
}

CurveRun run_of(std::vector<Series> s, const std::string& name) {
  CurveRun r;
  r.path = name;
  r.format = "test";
  r.series = std::move(s);
  return r;
}

}  // namespace

TEST(CurveAnalysis, IdenticalCurvesPass) {
  Series g = loss_curve(100);
  auto m = compare_series(g, g, default_tolerance("loss"), CurveOptions{});
  EXPECT_EQ(m.verdict, Verdict::kPass);
  EXPECT_EQ(m.points.size(), 100u);
  EXPECT_EQ(m.mean_rel_dev, 0.0);
  EXPECT_EQ(m.max_rel_dev, 0.0);
  EXPECT_FALSE(m.divergence_step.has_value());
  EXPECT_EQ(m.area_between, 0.0);
  EXPECT_EQ(m.final_rel_diff, 0.0);
  EXPECT_TRUE(m.trend_consistent);
  EXPECT_EQ(m.windows.size(), 10u);
}

TEST(CurveAnalysis, KnownDivergenceStep) {
  Series g = loss_curve(100), t = g;
  // From step 60 the target drifts upward by 3 % and more; a single 5 % blip at step 20 must not count.
  for (int i = 60; i < 100; ++i) t.values[i] *= 1.03 + 0.001 * (i - 60);
  t.values[20] *= 1.05;
  auto m = compare_series(g, t, default_tolerance("loss"), CurveOptions{});
  ASSERT_TRUE(m.divergence_step.has_value());
  EXPECT_EQ(*m.divergence_step, 60);
  EXPECT_EQ(m.verdict, Verdict::kFail) << "final 6.9 % off > 1 %";
  EXPECT_NEAR(m.max_rel_dev, 1.03 + 0.039 - 1, 1e-12);
  EXPECT_EQ(m.max_rel_dev_step, 99);
  // k = 1 finds the blip.
  Tolerance k1 = default_tolerance("loss");
  k1.consecutive = 1;
  EXPECT_EQ(*compare_series(g, t, k1, CurveOptions{}).divergence_step, 20);
}

TEST(CurveAnalysis, SmallNoiseWithinTolerancePasses) {
  Series g = loss_curve(200), t = g;
  for (size_t i = 0; i < t.values.size(); ++i) t.values[i] *= 1.0 + 0.004 * std::sin(i * 0.9);  // ±0.4 % (bf16-like)
  auto m = compare_series(g, t, default_tolerance("loss"), CurveOptions{});
  EXPECT_EQ(m.verdict, Verdict::kPass) << (m.reasons.empty() ? "" : m.reasons[0]);
  EXPECT_FALSE(m.divergence_step.has_value());
  EXPECT_LT(m.final_rel_diff, 0.004);
  EXPECT_GT(m.area_between, 0.0);
  EXPECT_NEAR(m.rel_area, m.area_between / m.area_golden, 1e-15);
}

TEST(CurveAnalysis, SpikesAndNaN) {
  Series g = loss_curve(80), t = g;
  t.values[50] = 9.0;                      // a loss spike
  t.values[70] = std::nan("");             // and a NaN
  auto spikes = find_spikes(t.steps, t.values, 21, 6.0);
  ASSERT_EQ(spikes.size(), 1u);
  EXPECT_EQ(spikes[0].step, 50);
  EXPECT_GT(spikes[0].value, spikes[0].threshold);
  EXPECT_TRUE(find_spikes(g.steps, g.values, 21, 6.0).empty()) << "a smooth decay has no spikes";
  auto m = compare_series(g, t, default_tolerance("loss"), CurveOptions{});
  EXPECT_EQ(m.nonfinite_target, (std::vector<int64_t>{70}));
  EXPECT_TRUE(m.nonfinite_golden.empty());
  ASSERT_EQ(m.spikes_target.size(), 1u);
  EXPECT_EQ(m.verdict, Verdict::kFail) << "target NaN where golden is finite";
  bool mentions_nan = false;
  for (const auto& r : m.reasons) mentions_nan |= r.find("NaN/Inf") != std::string::npos;
  EXPECT_TRUE(mentions_nan);
}

TEST(CurveAnalysis, MissingStepsAndFinalBest) {
  Series g = loss_curve(50), t = g;
  t.steps.erase(t.steps.begin() + 10);
  t.values.erase(t.values.begin() + 10);
  t.steps.push_back(50);
  t.values.push_back(t.values.back());
  auto m = compare_series(g, t, default_tolerance("loss"), CurveOptions{});
  EXPECT_EQ(m.missing_in_target, (std::vector<int64_t>{10}));
  EXPECT_EQ(m.missing_in_golden, (std::vector<int64_t>{50}));
  EXPECT_EQ(m.verdict, Verdict::kWarn);
  EXPECT_EQ(m.best_mode, "min");
  EXPECT_EQ(m.best_golden_step, 49);
  EXPECT_EQ(m.final_window, 2);  // 49 aligned points / 20, clamped to ≥ 1
}

TEST(CurveAnalysis, TrendMismatchFails) {
  Series g = loss_curve(60), t = g;
  for (size_t i = 0; i < t.values.size(); ++i) t.values[i] = g.values.front() + 0.01 * i;  // rising loss
  t.values.back() = g.values.back();  // even with a matching last point
  CurveOptions o;
  o.final_window = 1;
  auto m = compare_series(g, t, default_tolerance("loss"), o);
  EXPECT_FALSE(m.trend_consistent);
  EXPECT_EQ(m.verdict, Verdict::kFail);
}

TEST(CurveAnalysis, CompareCurvesSelectsSharedMetricsAndSkipsTiming) {
  Series lg = loss_curve(30), lt = loss_curve(30);
  Series time_g = lg, time_t = lg;
  time_g.metric = time_t.metric = "iter_time_ms";
  for (double& v : time_t.values) v *= 2;  // different hardware: not a numerical difference
  Series only = lg;
  only.metric = "eval_loss";
  auto c = compare_curves(run_of({lg, time_g, only}, "g"), run_of({lt, time_t}, "t"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->metrics.size(), 1u);
  EXPECT_EQ(c->metrics[0].metric, "loss");
  EXPECT_EQ(c->only_golden, (std::vector<std::string>{"eval_loss"}));
  EXPECT_EQ(c->verdict, Verdict::kWarn);
  CurveOptions o;
  o.metrics = {"lm loss"};
  auto c2 = compare_curves(run_of({lg}, "g"), run_of({lt}, "t"), o);
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(c2->verdict, Verdict::kPass);
  o.metrics = {"nope"};
  EXPECT_FALSE(compare_curves(run_of({lg}, "g"), run_of({lt}, "t"), o).ok());
}

TEST(CurveAnalysis, JsonAndCsvSchema) {
  Series g = loss_curve(30), t = g;
  t.values[5] = std::nan("");
  auto c = compare_curves(run_of({g}, "g"), run_of({t}, "t"));
  ASSERT_TRUE(c.ok());
  auto j = nlohmann::json::parse(curve_comparison_json(*c));
  EXPECT_EQ(j["schema"], "parity.curve/1");
  EXPECT_EQ(j["verdict"], "fail");
  const auto& m = j["metrics"][0];
  EXPECT_EQ(m["metric"], "loss");
  EXPECT_EQ(m["points"].size(), 30u);
  EXPECT_EQ(m["points"][5]["target"], "NaN");
  EXPECT_EQ(m["points"][5]["rel_dev"], "Infinity");
  EXPECT_EQ(m["nonfinite"]["target"][0], 5);
  EXPECT_TRUE(m["divergence_step"].is_null());
  for (const char* key : {"tolerance", "windows", "spikes", "final", "best", "area", "trend", "missing_in_golden"})
    EXPECT_TRUE(m.contains(key)) << key;
  std::string csv = curve_comparison_csv(*c);
  EXPECT_EQ(csv.rfind("schema,metric,step,golden,target,abs_diff,rel_dev,flags\n", 0), 0u);
  EXPECT_NE(csv.find("\nparity.curve.csv/2,loss,5,"), std::string::npos);
  EXPECT_NE(csv.find("nonfinite_target"), std::string::npos);
  std::string text = curve_comparison_text(*c, 100, false, nullptr);
  EXPECT_NE(text.find("FAIL"), std::string::npos);
  EXPECT_NE(text.find("×"), std::string::npos) << "the NaN cell in the sparkline";
}

// A metric name holding a comma or a quote (regex-named series can) stays one CSV cell; numbers are
// spelled in their shortest round-trip form.
TEST(CurveAnalysis, CsvQuotesNamesAndRoundTripsNumbers) {
  Series g = loss_curve(4), t = g;
  g.metric = t.metric = "loss, \"scaled\"";
  t.values[1] = 0.1;
  auto c = compare_curves(run_of({g}, "g"), run_of({t}, "t"));
  ASSERT_TRUE(c.ok());
  const std::string csv = curve_comparison_csv(*c);
  EXPECT_NE(csv.find("\nparity.curve.csv/2,\"loss, \"\"scaled\"\"\",1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.1,"), std::string::npos) << csv;
  EXPECT_EQ(parity::csv_number(0.1), "0.1");
  EXPECT_EQ(std::stod(parity::csv_number(1.0 / 3)), 1.0 / 3);
  EXPECT_EQ(parity::csv_number(-INFINITY), "-inf");
  EXPECT_EQ(parity::csv_escape("plain"), "plain");
}

TEST(CurveAnalysis, Sparkline) {
  EXPECT_EQ(sparkline({0, 1, 2, 3, 4, 5, 6, 7}, 8, 0, 7), "▁▂▃▄▅▆▇█");
  EXPECT_EQ(sparkline({1, 1}, 10, 1, 1), "▁▁");
  EXPECT_EQ(sparkline({0, NAN, 7}, 3, 0, 7), "▁×█");
  EXPECT_EQ(sparkline({}, 10, 0, 1), "");
}

TEST(RankConsistency, NamesTheDepartingRankAndStep) {
  std::vector<Series> s;
  for (int r = 0; r < 4; ++r) {
    Series x = loss_curve(60);
    x.rank = r;
    if (r == 2)
      for (int i = 37; i < 60; ++i) x.values[i] *= 1.01;
    if (r == 3) {  // rank 3 stops logging early: missing steps, not inconsistency
      x.steps.resize(58);
      x.values.resize(58);
    }
    s.push_back(x);
  }
  auto rc = compare_ranks(run_of(s, "run"));
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  ASSERT_EQ(rc->metrics.size(), 1u);
  const auto& m = rc->metrics[0];
  ASSERT_EQ(m.inconsistent.size(), 1u);
  EXPECT_EQ(m.inconsistent[0].rank, 2);
  EXPECT_EQ(m.inconsistent[0].from_step, 37);
  EXPECT_EQ(m.inconsistent[0].steps, 23);
  EXPECT_NEAR(m.inconsistent[0].max_rel_dev, 0.01, 1e-12);
  EXPECT_EQ(m.missing_steps.at(3), (std::vector<int64_t>{58, 59}));
  EXPECT_TRUE(rc->rank_inconsistent);
  EXPECT_EQ(rc->verdict, Verdict::kFail);
  auto j = nlohmann::json::parse(rank_comparison_json(*rc));
  EXPECT_EQ(j["schema"], "parity.ranks/1");
  EXPECT_EQ(j["code"], "RANK_INCONSISTENT");
  EXPECT_EQ(j["metrics"][0]["inconsistent"][0]["from_step"], 37);
}

TEST(RankConsistency, NaNOnOneRankAndConsistentRuns) {
  std::vector<Series> s;
  for (int r = 0; r < 3; ++r) {
    Series x = loss_curve(20);
    x.rank = r;
    s.push_back(x);
  }
  auto ok = compare_ranks(run_of(s, "run"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->verdict, Verdict::kPass);
  EXPECT_FALSE(ok->rank_inconsistent);
  s[1].values[12] = std::nan("");
  auto bad = compare_ranks(run_of(s, "run"));
  ASSERT_TRUE(bad.ok());
  ASSERT_EQ(bad->metrics[0].inconsistent.size(), 1u);
  EXPECT_EQ(bad->metrics[0].inconsistent[0].rank, 1);
  EXPECT_EQ(bad->metrics[0].inconsistent[0].from_step, 12);
  // A single rank cannot be compared.
  EXPECT_FALSE(compare_ranks(run_of({s[0]}, "run")).ok());
}

TEST(CurveAnalysis, GoldenZeroIsNotADenominator) {
  // A metric that crosses zero (e.g. a logit mean): golden exactly 0 at step 10, target 1e-6 off there.
  Series g, t;
  g.metric = t.metric = "logit_mean";
  for (int i = 0; i < 40; ++i) {
    g.steps.push_back(i);
    g.values.push_back(i == 10 ? 0.0 : 0.5 * std::sin(i * 0.3 + 0.1));
  }
  t = g;
  t.values[10] = 1e-6;
  auto m = compare_series(g, t, default_tolerance("logit_mean"), CurveOptions{});
  // |Δ| / (1e-3 · RMS of the golden ≈ 3.5e-4) ≈ 2.8e-3, not 1e-6 / 1e-12 = 1e6
  const double rms = [&] { double s = 0; for (double v : g.values) s += v * v; return std::sqrt(s / g.values.size()); }();
  EXPECT_NEAR(m.points[10].rel_dev, 1e-6 / (1e-3 * rms), 1e-12);
  EXPECT_LT(m.max_rel_dev, 0.01);
  EXPECT_EQ(m.verdict, Verdict::kPass);
  // An all-zero golden: the target's own size is the yardstick (any non-zero target is 100 % off).
  Series z = g, zt = g;
  for (double& v : z.values) v = 0;
  for (double& v : zt.values) v = 0;
  zt.values[39] = 1e-9;
  auto mz = compare_series(z, zt, default_tolerance("logit_mean"), CurveOptions{});
  EXPECT_EQ(mz.points[39].rel_dev, 1.0);
  EXPECT_EQ(mz.final_rel_diff, 1.0);
  EXPECT_EQ(mz.points[0].rel_dev, 0.0);
}

TEST(CurveAnalysis, SteadyDivergenceTransientAndSpikes) {
  Series g = loss_curve(100);
  Series steady = g, transient = g, spikes = g;
  for (int i = 50; i < 100; ++i) steady.values[i] *= 1.05;      // parts at 50 and stays apart
  for (int i = 50; i < 60; ++i) transient.values[i] *= 1.05;    // parts at 50, back at 60
  for (int i : {20, 45, 70}) spikes.values[i] *= 1.3;           // three isolated bad steps
  const Tolerance tol = default_tolerance("loss");
  auto ms = compare_series(g, steady, tol, CurveOptions{});
  EXPECT_EQ(ms.deviation_kind, "steady");
  EXPECT_EQ(*ms.divergence_step, 50);
  EXPECT_EQ(ms.fraction_above_after_divergence, 1.0);
  auto mt = compare_series(g, transient, tol, CurveOptions{});
  EXPECT_EQ(mt.deviation_kind, "transient");
  EXPECT_NEAR(mt.fraction_above_after_divergence, 0.2, 1e-12);  // 10 of the 50 steps from 50 on
  auto mk = compare_series(g, spikes, tol, CurveOptions{});
  EXPECT_EQ(mk.deviation_kind, "spikes");
  EXPECT_FALSE(mk.divergence_step.has_value());
  EXPECT_EQ(mk.spike_steps_above_tol, (std::vector<int64_t>{20, 45, 70}));
  EXPECT_EQ(compare_series(g, g, tol, CurveOptions{}).deviation_kind, "none");
}

TEST(CurveAnalysis, CountersSkippedUnlessAsked) {
  Series lg = loss_curve(30), lt = loss_curve(30);
  Series consumed, epoch, tokens, lr;
  consumed.metric = "consumed_samples";
  epoch.metric = "epoch_float";
  tokens.metric = "tokens_total";  // a counter by shape only: affine in the step
  lr.metric = "lr";                // linear warm-up is affine too, but lr is a training quantity
  for (int i = 0; i < 30; ++i) {
    for (Series* s : {&consumed, &epoch, &tokens, &lr}) s->steps.push_back(i);
    consumed.values.push_back(8.0 * (i + 1));
    epoch.values.push_back(i / 7.0);
    tokens.values.push_back(256.0 * i + 100);
    lr.values.push_back(1e-4 * i);
  }
  EXPECT_TRUE(is_counter_metric(consumed));
  EXPECT_TRUE(is_counter_metric(epoch));
  EXPECT_TRUE(is_counter_metric(tokens));
  EXPECT_FALSE(is_counter_metric(lr));
  EXPECT_FALSE(is_counter_metric(lg));
  Series ct = consumed;
  for (double& v : ct.values) v *= 2;  // the target's batch is twice as large: not a numerical difference
  auto c = compare_curves(run_of({lg, consumed, epoch, tokens, lr}, "g"), run_of({lt, ct, epoch, tokens, lr}, "t"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->counters_skipped, (std::vector<std::string>{"consumed_samples", "epoch_float", "tokens_total"}));
  EXPECT_EQ(c->metrics.size(), 2u);  // loss, lr
  EXPECT_EQ(c->verdict, Verdict::kPass);
  CurveOptions o;
  o.counters = true;
  auto c2 = compare_curves(run_of({lg, consumed}, "g"), run_of({lt, ct}, "t"), o);
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(c2->metrics.size(), 2u);
  EXPECT_EQ(c2->verdict, Verdict::kFail);
  // only counters in common: the error says they were left out and how to compare them
  auto c3 = compare_curves(run_of({consumed}, "g"), run_of({ct}, "t"));
  ASSERT_FALSE(c3.ok());
  EXPECT_NE(c3.status().message().find("--counters"), std::string::npos);
}
