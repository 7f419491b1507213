// resolve_thresholds (parity/thresholds.h): the one path from defaults, a thresholds file, flags and a
// policy to the thresholds in effect, taken by the CLI and the Python binding alike (issue 32 §3); and the
// help texts' defaults, generated from what ships.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "parity/thresholds.h"
#include <filesystem>

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

// ---- the thresholds file -------------------------------------------------------------------------

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  std::filesystem::path p = parity_test::process_temp_dir() / name;
  std::ofstream(p) << text;
  return p;
}

TEST(Thresholds, DefaultsCarryTheSourcedValues) {
  Thresholds th = default_thresholds();
  EXPECT_EQ(th.for_dtype(DType::kF32).cosine_pass, 0.999);
  EXPECT_EQ(th.for_dtype(DType::kBF16).kl_pass, 0.005);
  EXPECT_EQ(th.for_dtype(DType::kF16).kl_pass, 1e-4);
  EXPECT_EQ(th.for_dtype(DType::kF32).max_abs_fail, 1.0);
  EXPECT_EQ(th.for_dtype(DType::kF32).cosine_hard_fail, 0.9);
  EXPECT_TRUE(std::isinf(th.for_dtype(DType::kBF16).max_abs_fail));
  EXPECT_LT(th.for_dtype(DType::kF8E5M2).cosine_pass, th.for_dtype(DType::kF8E4M3).cosine_pass);
}

TEST(Thresholds, FileOverlaysDefaultsAllThenPerDtype) {
  auto p = write_temp("ok.json", R"({"all": {"rel_l2_warn": 0.02}, "bfloat16": {"cosine_pass": 0.998},
                                     "default": {"max_abs_fail": "Infinity"}, "f64": {"kl_pass": 1e-6}})");
  Result<Thresholds> th = load_thresholds(p.string(), default_thresholds());
  ASSERT_TRUE(th.ok()) << th.status().ToString();
  EXPECT_EQ(th->for_dtype(DType::kBF16).cosine_pass, 0.998);
  EXPECT_EQ(th->for_dtype(DType::kBF16).rel_l2_warn, 0.02);
  EXPECT_EQ(th->for_dtype(DType::kF32).rel_l2_warn, 0.02);
  EXPECT_EQ(th->for_dtype(DType::kF32).cosine_pass, 0.999);
  EXPECT_TRUE(std::isinf(th->fallback.max_abs_fail));
  EXPECT_EQ(th->for_dtype(DType::kF64).kl_pass, 1e-6);
  // Round trip through the printed form.
  auto again = write_temp("roundtrip.json", thresholds_to_json(*th));
  Result<Thresholds> back = load_thresholds(again.string(), default_thresholds());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(thresholds_to_json(*back), thresholds_to_json(*th));
}

TEST(Thresholds, BadFilesAreErrorsNamingTheFile) {
  struct Case { const char* name; const char* text; const char* expect; };
  const Case cases[] = {
      {"syntax.json", "{\"f32\": {", "not valid JSON"},
      {"dtype.json", R"({"f33": {"cosine_pass": 0.9}})", "unknown dtype key \"f33\""},
      {"field.json", R"({"f32": {"cosine": 0.9}})", "unknown threshold"},
      {"range.json", R"({"f32": {"cosine_pass": 1.5}})", "[-1, 1]"},
      {"neg.json", R"({"f32": {"max_abs_fail": -1}})", ">= 0"},
      {"type.json", R"({"f32": {"kl_pass": "small"}})", "expected a number"},
      {"array.json", R"([1, 2])", "expected a JSON object"},
  };
  for (const Case& c : cases) {
    auto p = write_temp(c.name, c.text);
    Result<Thresholds> th = load_thresholds(p.string(), default_thresholds());
    ASSERT_FALSE(th.ok()) << c.name;
    EXPECT_NE(th.status().message().find(p.string()), std::string::npos) << th.status().message();
    EXPECT_NE(th.status().message().find(c.expect), std::string::npos) << th.status().message();
  }
  Result<Thresholds> missing = load_thresholds("/nonexistent/parity-thresholds.json", default_thresholds());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/parity-thresholds.json"), std::string::npos);
}

}  // namespace
}  // namespace parity
