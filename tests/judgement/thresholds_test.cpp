// resolve_thresholds (parity/thresholds.h): the one path from defaults, a thresholds file, flags and a
// policy to the thresholds in effect, taken by the CLI and the Python binding alike (issue 32 §3); and the
// help texts' defaults, generated from what ships.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "parity/thresholds.h"
#include "temp_dir.h"

namespace parity {
namespace {

TEST(ResolveThresholds, NothingGivenIsWhatShips) {
  Result<Thresholds> th = resolve_thresholds({});
  ASSERT_TRUE(th.ok());
  EXPECT_EQ(thresholds_to_json(*th), thresholds_to_json(default_thresholds()));
  // a default-constructed entry is the shipped high-precision one (no member default that never ships)
  EXPECT_EQ(thresholds_to_json(Thresholds{{}, DTypeThresholds{}, VerdictPolicy::kNoiseModel}),
            thresholds_to_json(Thresholds{{}, default_thresholds().fallback, VerdictPolicy::kNoiseModel}));
}

TEST(ResolveThresholds, FileThenFlagsThenPolicy) {
  parity_test::TempDir dir;
  const std::string file = (dir / "th.json").string();
  std::ofstream(file) << R"({"bf16": {"cosine_pass": 0.998, "rel_l2_warn": 0.05}, "policy": "fixed-thresholds"})";
  ThresholdSources s;
  s.file = file;
  s.overrides = {{"rel_l2_warn", 0.02, "--rel-l2"}};  // a flag: every dtype, after the file
  Result<Thresholds> th = resolve_thresholds(s);
  ASSERT_TRUE(th.ok()) << th.status().message();
  EXPECT_EQ(th->for_dtype(DType::kBF16).cosine_pass, 0.998);
  EXPECT_EQ(th->for_dtype(DType::kBF16).rel_l2_warn, 0.02);
  EXPECT_EQ(th->for_dtype(DType::kF8E5M2).rel_l2_warn, 0.02);
  EXPECT_EQ(th->fallback.rel_l2_warn, 0.02);
  EXPECT_EQ(th->policy, VerdictPolicy::kFixedThresholds);  // the file's policy
  s.policy = VerdictPolicy::kNoiseModel;                  // a policy given last wins over the file's
  EXPECT_EQ(resolve_thresholds(s)->policy, VerdictPolicy::kNoiseModel);
  // a flag equals the same value in the file's "all": both paths give one result
  std::ofstream(file) << R"({"all": {"rel_l2_warn": 0.02}})";
  ThresholdSources via_file;
  via_file.file = file;
  ThresholdSources via_flag;
  via_flag.overrides = {{"rel_l2_warn", 0.02, "--rel-l2"}};
  EXPECT_EQ(thresholds_to_json(*resolve_thresholds(via_file)), thresholds_to_json(*resolve_thresholds(via_flag)));
}

TEST(ResolveThresholds, BadInputsNameTheirOrigin) {
  ThresholdSources s;
  s.overrides = {{"cosine_pass", 2, "--cosine"}};
  EXPECT_EQ(resolve_thresholds(s).status().message(), "--cosine: all.cosine_pass: a cosine bound must lie in [-1, 1], got 2");
  s.overrides = {{"rel_l2_warn", -1, "--rel-l2"}};
  EXPECT_EQ(resolve_thresholds(s).status().message(), "--rel-l2: all.rel_l2_warn: must be >= 0, got -1");
  s.overrides = {{"max_abs_fail", INFINITY, "--max-abs"}};  // infinite: the rule is off
  ASSERT_TRUE(resolve_thresholds(s).ok());
  EXPECT_TRUE(std::isinf(resolve_thresholds(s)->fallback.max_abs_fail));
  s.overrides = {{"cosine_passs", 0.9, "--x"}};
  EXPECT_FALSE(resolve_thresholds(s).ok());
  ThresholdSources missing;
  missing.file = "/nonexistent/th.json";
  EXPECT_NE(resolve_thresholds(missing).status().message().find("/nonexistent/th.json"), std::string::npos);
}

TEST(ThresholdDefaultText, SaysWhatShipsPerDtype) {
  EXPECT_EQ(threshold_default_text("cosine_pass"), "0.999; f8_e4m3 0.995, f8_e5m2 0.98");
  EXPECT_EQ(threshold_default_text("max_abs_fail"), "1; bf16 off, f8_e4m3 off, f8_e5m2 off");
  EXPECT_EQ(threshold_default_text("max_rel_warn"), "off");
  EXPECT_EQ(threshold_default_text("stats_rel_warn"), "0.5");
  EXPECT_EQ(threshold_default_text("no_such_field"), "");
  EXPECT_EQ(threshold_default_text("kl_pass"), "0.0001; bf16 0.005, f8_e4m3 0.005, f8_e5m2 0.005");
}

}  // namespace
}  // namespace parity
