// The choices `parity eval` and parity.eval_ppl leave to the library (issue 32 §3, §5): the perplexity
// thresholds with the user's overrides over them, and reading two multiple-choice files into one final
// result (sources named, skipped lines among the problems, a pass with skipped lines a warn).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "parity/eval.h"

namespace fs = std::filesystem;
using namespace parity::eval;
using parity::Verdict;

namespace {
fs::path fixture(const std::string& n) { return fs::path(PARITY_SOURCE_DIR) / "tests/fixtures/eval" / n; }

// The golden fixture with one line that is not a question appended: read_mc skips it.
fs::path golden_with_a_bad_line() {
  fs::path p = fs::temp_directory_path() / "parity_options_test_mc.jsonl";
  std::ifstream in(fixture("mc_golden.jsonl"));
  std::ofstream out(p);
  out << in.rdbuf() << "{not a question\n";
  return p;
}
}  // namespace

TEST(PplThresholdChoice, NothingSetIsTheChoiceForTheLogitsDtypes) {
  const PplThresholds th = choose_ppl_thresholds({}, "f32", "bf16");
  const PplThresholds lib = ppl_thresholds_for_logits("f32", "bf16");
  EXPECT_EQ(th.kld, lib.kld);
  EXPECT_EQ(th.kld_source, lib.kld_source);
  EXPECT_EQ(th.ppl_rel, PplThresholds{}.ppl_rel);  // the struct's default, not a restated one
  EXPECT_TRUE(std::isnan(th.ppl_diff));
}

TEST(PplThresholdChoice, ANamedDtypeWinsOverTheLogitsAndKldOverBoth) {
  PplThresholdOverrides user;
  user.kld_dtype = "f16";
  PplThresholds th = choose_ppl_thresholds(user, "bf16", "bf16");
  EXPECT_EQ(th.kld, default_ppl_thresholds("f16").kld);
  EXPECT_EQ(th.kld_source, "--kld-dtype f16");
  user.kld = 0.25;
  user.ppl_rel = 0.01;
  user.ppl_diff = 0.5;
  th = choose_ppl_thresholds(user, "bf16", "bf16");
  EXPECT_EQ(th.kld, 0.25);
  EXPECT_EQ(th.kld_source, "--kld");
  EXPECT_EQ(th.kld_dtype, "f16");  // the dtype named stays reported
  EXPECT_EQ(th.ppl_rel, 0.01);
  EXPECT_EQ(th.ppl_diff, 0.5);
}

TEST(PplThresholdChoice, KldSourceSpeaksTheCallersSpelling) {
  PplThresholdOverrides user;
  user.kld_dtype = "bf16";
  user.kld_dtype_spelling = "kld_dtype=";
  EXPECT_EQ(choose_ppl_thresholds(user, "", "").kld_source, "kld_dtype=bf16");
}

TEST(McFiles, TheResultNamesTheFilesAndIsFinal) {
  McOptions o;
  o.bootstrap_samples = 100;
  auto r = compare_mc_files(fixture("mc_golden.jsonl"), fixture("mc_target.jsonl"), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->golden_source, fixture("mc_golden.jsonl").string());
  EXPECT_EQ(r->target_source, fixture("mc_target.jsonl").string());
  EXPECT_TRUE(r->problems.empty());
}

TEST(McFiles, ASkippedLineIsAProblemAndAPassBecomesAWarn) {
  McOptions o;
  o.bootstrap_samples = 100;
  const fs::path bad = golden_with_a_bad_line();
  auto r = compare_mc_files(fixture("mc_golden.jsonl"), bad, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->overall.verdict, Verdict::kPass);  // the same answers on both sides
  EXPECT_EQ(r->verdict, Verdict::kWarn);
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_NE(r->problems[0].message().find(bad.string()), std::string::npos);
  fs::remove(bad);
}

TEST(McFiles, AnUnreadableFileIsAnErrorNamingIt) {
  auto r = compare_mc_files(fixture("mc_golden.jsonl"), fixture("no_such_file.jsonl"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no_such_file.jsonl"), std::string::npos);
}
