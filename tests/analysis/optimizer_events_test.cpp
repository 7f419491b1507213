// Optimizer events in the local-error analysis (docs/timeline.md "Optimizer events in the suspects"): an optimizer
// event records no inputs of its own; its inputs are its module's parameter gradients of the step, the step's
// <global> optimizer event and its own outputs at the previous step. A moment that starts to differ at step 1 is the
// source; the later steps, whose gradients and previous state carry that difference, are carriers and rank after it.
#include <gtest/gtest.h>

#include "analysis/synth.h"
#include "parity/analysis.h"

namespace parity {
namespace {

using test::Synth;

// One training step of module l0: forward (parameter, input, output), its parameter gradient, the <global> lr, its
// moment and update, with the relative errors given.
void training_step(Synth& s, int64_t step, double weights, double grad, double moment) {
  s.row("l0", "Linear", "forward", "parameter", 0, weights, DType::kF32, DType::kF32, step);
  s.row("l0", "Linear", "forward", "input", 0, 0, DType::kF32, DType::kF32, step);
  s.row("l0", "Linear", "forward", "output", 0, weights, DType::kF32, DType::kF32, step);
  s.row("l0", "Linear", "backward", "input", 0, weights, DType::kF32, DType::kF32, step);
  s.row("l0", "Linear", "backward", "grad", 0, grad, DType::kF32, DType::kF32, step);
  s.row("<global>", "AdamW", "optimizer", "lr", 0, 0, DType::kF64, DType::kF64, step);
  s.row("l0", "AdamW", "optimizer", "exp_avg", 0, moment, DType::kF32, DType::kF32, step);
  s.row("l0", "AdamW", "optimizer", "update", 0, moment, DType::kF32, DType::kF32, step);
}

TEST(OptimizerEvents, TheFirstDifferingStepIsTheSourceAndLaterStepsCarry) {
  Synth s;
  training_step(s, 0, 0, 0, 0);
  training_step(s, 1, 0, 0, 1e-4);        // the moment parts; weights and gradients agree
  training_step(s, 2, 1e-4, 2e-4, 3e-4);  // weights from step 1's update: gradients and moments follow
  training_step(s, 3, 3e-4, 5e-4, 9e-4);  // larger, but carried: no more than its inputs bring (x3 < 8)
  const Analysis a = analyse(s.result);
  ASSERT_FALSE(a.suspects.empty());
  EXPECT_EQ(a.suspects[0].step, 1);
  EXPECT_EQ(a.suspects[0].name, "l0/optimizer");
  EXPECT_EQ(a.suspects[0].kind, SuspectKind::kSource);
  for (const Suspect& x : a.suspects)
    if (x.direction == "optimizer") EXPECT_EQ(x.step, 1) << x.name << " " << x.why;
  for (const EventError& e : a.events)
    if (e.direction == "optimizer" && e.module == "l0" && e.step >= 2) {
      EXPECT_EQ(e.role, EventRole::kCarrier) << e.step;
      EXPECT_GT(e.input_ratio, 0) << e.step;  // its gradients and previous state, not nothing
    }
}

}  // namespace
}  // namespace parity
