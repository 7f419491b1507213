// decide_row_verdict (parity/verdict_policy.h): the final verdict of a row, and a reason that quotes the
// fixed-threshold reason whole at the place it reports (a row keeps the fixed reason as that span).
#include <gtest/gtest.h>

#include <string>

#include "parity/noise.h"
#include "parity/verdict_policy.h"

namespace parity {
namespace {

TEST(VerdictPolicy, EveryReasonQuotesTheFixedReasonWhereItSays) {
  const std::string fixed_reason = "max abs 16 > 1";
  int cases = 0;
  for (Verdict fixed : {Verdict::kPass, Verdict::kWarn, Verdict::kFail, Verdict::kError})
    for (NoiseClass noise : {NoiseClass::kNoise, NoiseClass::kElevated, NoiseClass::kStructural, NoiseClass::kUnknown})
      for (double ratio : {0.0, 3.5, 410.0})
        for (const std::string layout : {"", "shapes differ (2x3 vs 3x2, same element count, compared flat)"})
          for (VerdictPolicy policy : {VerdictPolicy::kNoiseModel, VerdictPolicy::kFixedThresholds}) {
            const RowVerdict v = decide_row_verdict(fixed, fixed_reason, noise, ratio, layout, policy);
            ASSERT_LE(v.fixed_reason_at + fixed_reason.size(), v.reason.size()) << v.reason;
            EXPECT_EQ(v.reason.substr(v.fixed_reason_at, fixed_reason.size()), fixed_reason) << v.reason;
            ++cases;
          }
  EXPECT_EQ(cases, 4 * 4 * 3 * 2 * 2);
}

TEST(VerdictPolicy, TheModelHasTheLastWordAndQuotesTheFixedJudgement) {
  const RowVerdict structural =
      decide_row_verdict(Verdict::kPass, "cosine 0.999999", NoiseClass::kStructural, 410, "", VerdictPolicy::kNoiseModel);
  EXPECT_EQ(structural.verdict, Verdict::kFail);
  EXPECT_EQ(structural.reason, "beyond rounding (" + noise_ratio_text(410) + "); fixed thresholds pass: cosine 0.999999");
  const RowVerdict noise =
      decide_row_verdict(Verdict::kFail, "max abs 16 > 1", NoiseClass::kNoise, 0.5, "", VerdictPolicy::kNoiseModel);
  EXPECT_EQ(noise.verdict, Verdict::kPass);
  EXPECT_EQ(noise.reason, "within rounding noise (" + noise_ratio_text(0.5) + "); fixed thresholds fail: max abs 16 > 1");
  const RowVerdict fixed_policy =
      decide_row_verdict(Verdict::kFail, "max abs 16 > 1", NoiseClass::kNoise, 0.5, "", VerdictPolicy::kFixedThresholds);
  EXPECT_EQ(fixed_policy.verdict, Verdict::kFail);
  EXPECT_EQ(fixed_policy.reason, "max abs 16 > 1");
  EXPECT_EQ(fixed_policy.fixed_reason_at, 0u);
}

}  // namespace
}  // namespace parity
