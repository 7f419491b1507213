// decide_row_verdict (parity/verdict_policy.h): the final verdict of a row from all of its evidence, and a
// reason that quotes the fixed-threshold reason whole at the place it reports (a row keeps the fixed
// reason as that span).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "parity/noise.h"
#include "parity/verdict_policy.h"

namespace parity {
namespace {

RowEvidence measured(Verdict fixed, std::string_view fixed_reason, NoiseClass noise, double ratio,
                     std::string layout = "", VerdictPolicy policy = VerdictPolicy::kNoiseModel) {
  RowEvidence e;
  e.fixed = fixed;
  e.fixed_reason = fixed_reason;
  e.noise = noise;
  e.ratio = ratio;
  e.layout_change = std::move(layout);
  e.policy = policy;
  return e;
}

TEST(VerdictPolicy, EveryReasonQuotesTheFixedReasonWhereItSays) {
  const std::string fixed_reason = "max abs 16 > 1";
  int cases = 0;
  for (Verdict fixed : {Verdict::kPass, Verdict::kWarn, Verdict::kFail, Verdict::kError})
    for (NoiseClass noise : {NoiseClass::kNoise, NoiseClass::kElevated, NoiseClass::kStructural, NoiseClass::kUnknown})
      for (double ratio : {0.0, 3.5, 410.0})
        for (const std::string layout : {"", "shapes differ (2x3 vs 3x2, same element count, compared flat)"})
          for (VerdictPolicy policy : {VerdictPolicy::kNoiseModel, VerdictPolicy::kFixedThresholds})
            for (int context = 0; context < 4; ++context) {  // none, weak pairing + structure, cancellation + flip, update
              RowEvidence e = measured(fixed, fixed_reason, noise, ratio, layout, policy);
              if (context == 1) e.weakly_paired = true, e.match_confidence = 0.5, e.structure = ErrorShape{0.9, 0.01, 12};
              if (context == 2) e.cancelled = true, e.sum_cancellation = 40, e.flip = RowEvidence::Flip::kAffected;
              if (context == 3) e.update_differs = true, e.update_from_step = 1, e.update_rel_error = 0.3, e.update_grad_rel_error = NAN;
              const RowVerdict v = decide_row_verdict(e);
              ASSERT_LE(v.fixed_reason_at + fixed_reason.size(), v.reason.size()) << v.reason;
              EXPECT_EQ(v.reason.substr(v.fixed_reason_at, fixed_reason.size()), fixed_reason) << v.reason;
              ++cases;
            }
  EXPECT_EQ(cases, 4 * 4 * 3 * 2 * 2 * 4);
}

TEST(VerdictPolicy, TheModelHasTheLastWordAndQuotesTheFixedJudgement) {
  const RowVerdict structural = decide_row_verdict(measured(Verdict::kPass, "cosine 0.999999", NoiseClass::kStructural, 410));
  EXPECT_EQ(structural.verdict, Verdict::kFail);
  EXPECT_EQ(structural.reason, "beyond rounding (" + noise_ratio_text(410) + "); fixed thresholds pass: cosine 0.999999");
  const RowVerdict noise = decide_row_verdict(measured(Verdict::kFail, "max abs 16 > 1", NoiseClass::kNoise, 0.5));
  EXPECT_EQ(noise.verdict, Verdict::kPass);
  EXPECT_EQ(noise.reason, "within rounding noise (" + noise_ratio_text(0.5) + "); fixed thresholds fail: max abs 16 > 1");
  const RowVerdict fixed_policy = decide_row_verdict(
      measured(Verdict::kFail, "max abs 16 > 1", NoiseClass::kNoise, 0.5, "", VerdictPolicy::kFixedThresholds));
  EXPECT_EQ(fixed_policy.verdict, Verdict::kFail);
  EXPECT_EQ(fixed_policy.reason, "max abs 16 > 1");
  EXPECT_EQ(fixed_policy.fixed_reason_at, 0u);
}

// The row's context, each piece of evidence on its own.
TEST(VerdictPolicy, AWeakPairingCannotFailARunAlone) {
  RowEvidence e = measured(Verdict::kFail, "cosine 0.5 < 0.9", NoiseClass::kStructural, 900);
  e.weakly_paired = true;
  e.match_confidence = 0.4;
  const RowVerdict v = decide_row_verdict(e);
  EXPECT_EQ(v.verdict, Verdict::kWarn);
  EXPECT_EQ(v.reason.rfind("paired by order alignment only (confidence 0.40); ", 0), 0u) << v.reason;
  e.fixed = Verdict::kError;  // an error stays one: nothing was compared
  EXPECT_EQ(decide_row_verdict(e).verdict, Verdict::kError);
}

TEST(VerdictPolicy, FlippedDecisionsAreShownNeverFailed) {
  RowEvidence e = measured(Verdict::kFail, "cosine 0.2 < 0.9", NoiseClass::kNoise, 0.8);
  e.flip = RowEvidence::Flip::kDecision;
  e.flip_op = "topk";
  e.flipped = 3;
  e.compared = 64;
  const RowVerdict v = decide_row_verdict(e);
  EXPECT_EQ(v.verdict, Verdict::kPass);
  EXPECT_EQ(v.reason.rfind("a discrete decision (topk) flipped at 3 of 64 positions", 0), 0u) << v.reason;
}

TEST(VerdictPolicy, AnUpdateThatDiffersFailsUnderTheNoiseModelOnly) {
  RowEvidence e = measured(Verdict::kPass, "cosine 1", NoiseClass::kNoise, 0.2);
  e.update_differs = true;
  e.update_from_step = 2;
  e.update_rel_error = 0.25;
  e.update_grad_rel_error = 0.001;
  const RowVerdict v = decide_row_verdict(e);
  EXPECT_EQ(v.verdict, Verdict::kFail);
  EXPECT_EQ(v.reason.rfind("its update since step 2 differs by 0.25 of the update's size while its gradient there "
                           "differs by 0.001: the optimizer step differs; ", 0), 0u) << v.reason;
  e.policy = VerdictPolicy::kFixedThresholds;
  EXPECT_EQ(decide_row_verdict(e).verdict, Verdict::kPass);
}

}  // namespace
}  // namespace parity
