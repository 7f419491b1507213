// The divergence timeline (parity/analysis.h, docs/timeline.md) on synthetic rows of many steps: the bound
// structural_min · sqrt(k − k0 + 1) (square-root growth is no crossing, faster growth crosses where it passes
// the bound, not where it first passes one step's limit), the first crossing in step and execution order, and
// the causes the evidence names (a moment before the gradients, a total norm with agreeing gradients, an lr).
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/synth.h"
#include "parity/analysis.h"

namespace parity {
namespace {

using test::Synth;

// One row of `name` (module, direction, role) at `step` with noise ratio `ratio`.
void add(Synth& s, const std::string& module, const std::string& direction, const std::string& role,
         const std::string& name, int64_t step, double ratio) {
  CompareRow& r = s.row(module, "", direction, role, 0, 0, DType::kF32, DType::kF32, step);
  s.last_golden().name = s.last_target().name = name;
  r.noise_ratio = ratio;
}

// A training step: a forward output, a parameter gradient, the clipping's total norm, a moment and an update,
// in that order, with the ratios given.
void step_rows(Synth& s, int64_t step, double fwd, double grad, double norm, double moment, double update) {
  add(s, "l0", "forward", "output", "l0/forward/output/0", step, fwd);
  add(s, "l0", "backward", "grad", "l0/backward/grad/weight", step, grad);
  add(s, "<global>", "optimizer", "grad_norm", "<global>/optimizer/grad_norm/0", step, norm);
  add(s, "l0", "optimizer", "exp_avg_sq", "l0/optimizer/exp_avg_sq/weight", step, moment);
  add(s, "l0", "optimizer", "update", "l0/optimizer/update/weight", step, update);
}

TEST(Timeline, OneStepHasNoTimeline) {
  Synth s;
  step_rows(s, 0, 1, 1, 1, 1, 1);
  EXPECT_FALSE(divergence_timeline(s.result, {}).has_value());
}

TEST(Timeline, SquareRootGrowthStaysWithinTheBound) {
  Synth s;
  for (int64_t k = 0; k < 200; ++k) {
    const double r = 0.9 * 32 * std::sqrt(static_cast<double>(k + 1));  // beyond one step's 32 u from step 1
    step_rows(s, k, r, r, r, r, r);
  }
  const auto t = divergence_timeline(s.result, {});
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE(t->first.has_value());
  EXPECT_TRUE(t->cause.empty());
  EXPECT_NEAR(t->median_growth, 0.5, 1e-9);
  EXPECT_EQ(t->steps.size(), 200u);
  ASSERT_EQ(t->tensors.size(), 5u);
  EXPECT_EQ(t->tensors[0].first_crossing, -1);
  EXPECT_NEAR(t->tensors[0].worst_of_bound, 0.9, 1e-3);
}

TEST(Timeline, LinearGrowthCrossesWhereItPassesTheBound) {
  Synth s;
  for (int64_t k = 0; k < 300; ++k) {
    const double quiet = 1.0;
    step_rows(s, k, 2.0 * static_cast<double>(k + 1), quiet, quiet, quiet, quiet);  // 2(k+1) > 32·sqrt(k+1): k ≥ 256
  }
  const auto t = divergence_timeline(s.result, {});
  ASSERT_TRUE(t.has_value() && t->first.has_value());
  EXPECT_EQ(t->first->step, 256);
  EXPECT_EQ(t->first->name, "l0/forward/output/0");
  EXPECT_EQ(t->first->phase, "forward");
  EXPECT_EQ(t->cause, "forward");
  EXPECT_NEAR(t->first->bound, 32 * std::sqrt(257.0), 1e-9);
  EXPECT_NEAR(t->tensors[0].growth, 1.0, 1e-9);  // the forward output's
  EXPECT_NEAR(t->median_growth, 0.0, 1e-9);      // the four quiet tensors' constant ratio
}

TEST(Timeline, AMomentBeforeTheGradientsIsTheOptimizerWithItsConfiguration) {
  Synth s;
  step_rows(s, 0, 0, 0, 0, 0, 0);
  step_rows(s, 1, 0, 0, 0, 5e4, 3e3);   // the moment and the update part; the gradients agree
  step_rows(s, 2, 500, 400, 300, 6e4, 4e3);
  ConfigDifference eps{"optimizer.0.param_groups.0.eps", "1e-08", "1e-06", "optimizer", true};
  ConfigDifference other{"extra.scenario", "\"a\"", "\"b\"", "other", false};
  const auto t = divergence_timeline(s.result, {eps, other});
  ASSERT_TRUE(t.has_value() && t->first.has_value());
  EXPECT_EQ(t->first->step, 1);
  EXPECT_EQ(t->first->name, "l0/optimizer/exp_avg_sq/weight");  // execution order: the moment before the update
  EXPECT_EQ(t->cause, "optimizer");
  EXPECT_EQ(t->config_keys, std::vector<std::string>{"optimizer.0.param_groups.0.eps"});
  ASSERT_EQ(t->phase_first.size(), 5u);
  EXPECT_EQ(t->phase_first[0].phase, "forward");
  EXPECT_EQ(t->phase_first[0].step, 2);
  ASSERT_EQ(t->modules.size(), 2u);  // <global> and l0
  EXPECT_EQ(t->modules[1].module, "l0");
  EXPECT_EQ(t->modules[1].first_crossing, 1);
}

TEST(Timeline, ATotalNormWithAgreeingGradientsIsTheReduction) {
  Synth s;
  step_rows(s, 0, 0, 1, 1e6, 1e5, 0);
  step_rows(s, 1, 900, 900, 1e6, 1e5, 1e4);
  const auto t = divergence_timeline(s.result, {});
  ASSERT_TRUE(t.has_value() && t->first.has_value());
  EXPECT_EQ(t->first->name, "<global>/optimizer/grad_norm/0");
  EXPECT_EQ(t->cause, "reduction");
}

TEST(Timeline, AGradientBeforeTheOptimizerIsTheModel) {
  Synth s;
  step_rows(s, 0, 0, 0, 0, 0, 0);
  step_rows(s, 1, 1, 1e3, 1e3, 1e4, 1e4);
  const auto t = divergence_timeline(s.result, {});
  ASSERT_TRUE(t.has_value() && t->first.has_value());
  EXPECT_EQ(t->first->phase, "gradient");
  EXPECT_EQ(t->cause, "gradient");
}

TEST(Timeline, ADifferingLearningRateIsAConfigFinding) {
  Synth s;
  step_rows(s, 0, 0, 0, 0, 0, 0);
  add(s, "<global>", "optimizer", "lr", "<global>/optimizer/lr/group0", 0, INFINITY);
  step_rows(s, 1, 0, 0, 0, 0, 0);
  add(s, "<global>", "optimizer", "lr", "<global>/optimizer/lr/group0", 1, 1e6);
  const auto t = divergence_timeline(s.result, {});
  ASSERT_TRUE(t.has_value() && t->first.has_value());
  EXPECT_EQ(t->first->step, 0);
  EXPECT_EQ(t->first->phase, "lr");
  EXPECT_EQ(t->cause, "config");
}

}  // namespace
}  // namespace parity
