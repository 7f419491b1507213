// accept_rounding_noise: only warn rows classed as rounding noise become pass.
#include <gtest/gtest.h>

#include "parity/analysis.h"

namespace parity {
namespace {

CompareRow row(const char* name, Verdict v, NoiseClass c) {
  CompareRow r;
  r.golden.name = r.target.name = name;
  r.mode = CompareMode::kTensor;
  r.verdict = v;
  r.reason = "rel L2 0.017 > 0.01";
  r.noise = c;
  r.noise_ratio = 1.9;
  return r;
}

TEST(AcceptRoundingNoise, OnlyWarnRowsWithinNoiseBecomePass) {
  CompareResult res;
  res.rows = {row("a", Verdict::kWarn, NoiseClass::kNoise), row("b", Verdict::kWarn, NoiseClass::kElevated),
              row("c", Verdict::kFail, NoiseClass::kNoise), row("d", Verdict::kWarn, NoiseClass::kStructural),
              row("e", Verdict::kWarn, NoiseClass::kUnknown)};
  res.summary = summarize_compare(res);
  ASSERT_EQ(res.summary.warn, 4);
  EXPECT_EQ(accept_rounding_noise(res), 1);
  EXPECT_EQ(res.rows[0].verdict, Verdict::kPass);
  EXPECT_EQ(res.rows[0].reason, "within rounding noise (1.9 u); fixed thresholds: rel L2 0.017 > 0.01");
  EXPECT_EQ(res.rows[1].verdict, Verdict::kWarn);
  EXPECT_EQ(res.rows[2].verdict, Verdict::kFail);
  EXPECT_EQ(res.rows[3].verdict, Verdict::kWarn);
  EXPECT_EQ(res.rows[4].verdict, Verdict::kWarn);
  EXPECT_EQ(res.summary.pass, 1);
  EXPECT_EQ(res.summary.warn, 3);
  EXPECT_EQ(res.summary.fail, 1);
}

}  // namespace
}  // namespace parity
