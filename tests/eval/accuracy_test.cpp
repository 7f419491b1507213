// Downstream accuracy: exact McNemar and the paired bootstrap against hand-computed cases; multiple
// choice from parity.log_choices files; lm-eval results and samples fixtures (tests/fixtures/eval/).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "parity/eval.h"

namespace fs = std::filesystem;
using namespace parity::eval;
using parity::Verdict;

namespace {
fs::path fixture(const std::string& n) { return fs::path(PARITY_SOURCE_DIR) / "tests/fixtures/eval" / n; }
}  // namespace

TEST(McNemar, HandComputed) {
  EXPECT_DOUBLE_EQ(mcnemar_exact_p(0, 0), 1.0);
  EXPECT_DOUBLE_EQ(mcnemar_exact_p(1, 0), 1.0);                 // 2 · 1/2
  EXPECT_NEAR(mcnemar_exact_p(5, 0), 2.0 / 32, 1e-15);          // 2 · 1/32
  EXPECT_NEAR(mcnemar_exact_p(10, 2), 2.0 * 79 / 4096, 1e-14);  // C(12,0)+C(12,1)+C(12,2) = 79
  EXPECT_NEAR(mcnemar_exact_p(2, 10), 2.0 * 79 / 4096, 1e-14);  // symmetric
  EXPECT_DOUBLE_EQ(mcnemar_exact_p(3, 3), 1.0);                 // capped at 1
  EXPECT_NEAR(mcnemar_exact_p(3, 1), 2.0 * 5 / 16, 1e-15);
  // Large counts stay finite (log-space binomials): 600 vs 400 is overwhelming.
  EXPECT_LT(mcnemar_exact_p(600, 400), 1e-9);
}

TEST(PairedBootstrap, DegenerateAndDeterministic) {
  std::vector<uint8_t> g(50, 0), t(50, 1);
  auto ci = paired_bootstrap(g, t, 2000, 0.95, 1);
  EXPECT_EQ(ci.low, 1.0);
  EXPECT_EQ(ci.high, 1.0);
  auto zero = paired_bootstrap(t, t, 2000, 0.95, 1);
  EXPECT_EQ(zero.low, 0.0);
  EXPECT_EQ(zero.high, 0.0);
  // A mixed case: 40 of 400 questions flip right→wrong, 20 wrong→right: Δ = −0.05; the paired
  // standard error is sqrt((Σd² /n − Δ²)/n) = sqrt((60/400 − 0.0025)/400) ≈ 0.0192, so the 95 %
  // interval is about Δ ± 1.96·0.0192.
  std::vector<uint8_t> a(400, 1), b(400, 1);
  for (int i = 0; i < 40; ++i) b[i] = 0;
  for (int i = 40; i < 60; ++i) a[i] = 0;
  auto m = paired_bootstrap(a, b, 10000, 0.95, 42);
  const double se = std::sqrt((60.0 / 400 - 0.0025) / 400);
  EXPECT_NEAR(m.low, -0.05 - 1.96 * se, 0.006);
  EXPECT_NEAR(m.high, -0.05 + 1.96 * se, 0.006);
  auto again = paired_bootstrap(a, b, 10000, 0.95, 42);
  EXPECT_EQ(m.low, again.low);
  EXPECT_EQ(m.high, again.high);
}

TEST(MultipleChoice, ParityChoiceFilesWithSubjects) {
  std::vector<parity::Status> problems;
  auto g = read_mc(fixture("mc_golden.jsonl"), &problems);
  auto t = read_mc(fixture("mc_target.jsonl"), &problems);
  ASSERT_TRUE(g.ok() && t.ok());
  EXPECT_TRUE(problems.empty());
  McOptions o;
  o.bootstrap_samples = 1000;
  auto r = compare_mc(*g, *t, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->overall.questions, 12);
  EXPECT_DOUBLE_EQ(r->overall.golden_acc, 1.0);
  EXPECT_DOUBLE_EQ(r->overall.target_acc, 10.0 / 12);
  EXPECT_EQ(r->overall.mcnemar.only_golden, 2);
  EXPECT_EQ(r->overall.mcnemar.only_target, 0);
  EXPECT_DOUBLE_EQ(r->overall.mcnemar.p_value, 0.5);
  EXPECT_FALSE(r->overall.distinguishable);
  EXPECT_EQ(r->overall.verdict, Verdict::kFail) << "16.7 points > 2";
  ASSERT_EQ(r->subjects.size(), 2u);
  EXPECT_EQ(r->subjects[0].group, "anatomy");
  EXPECT_EQ(r->subjects[0].questions, 6);
  EXPECT_DOUBLE_EQ(r->subjects[0].target_acc, 5.0 / 6);
  auto j = nlohmann::json::parse(mc_json(*r));
  EXPECT_EQ(j["schema"], "parity.eval.mc/2");
  EXPECT_EQ(j["overall"]["mcnemar"]["only_golden"], 2);
  // Length normalisation picks loglik/length: q with loglik (-1,-3,-3)/(1,2,3) still picks 0.
  McQuestion q{"x", "", {-2.0, -3.0}, {1, 4}, 1};
  EXPECT_EQ(mc_choice(q, false), 0);
  EXPECT_EQ(mc_choice(q, true), 1);  // −2/1 < −3/4
}

TEST(LmEval, ResultsAndSamples) {
  LmEvalOptions o;
  o.mc.bootstrap_samples = 1000;
  std::vector<fs::path> sa = {fixture("samples_arc_easy_2024-05-01T12-00-00.123456.jsonl")};
  std::vector<fs::path> sb = {fixture("samples_arc_easy_2024-05-02T08-30-00.654321.jsonl")};
  auto r = compare_lm_eval(fixture("lmeval_a.json"), fixture("lmeval_b.json"), sa, sb, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->only_a, (std::vector<std::string>{"hellaswag"}));
  EXPECT_EQ(r->only_b, (std::vector<std::string>{"piqa"}));
  const LmEvalMetric* anatomy = nullptr;
  const LmEvalMetric* arc_acc = nullptr;
  for (const auto& m : r->metrics) {
    if (m.task == "mmlu_anatomy" && m.metric == "acc") anatomy = &m;
    if (m.task == "arc_easy" && m.metric == "acc") arc_acc = &m;
  }
  ASSERT_TRUE(anatomy && arc_acc);
  // z = (0.537 − 0.55)/sqrt(2·0.043²), p = erfc(|z|/√2).
  const double z = (0.537 - 0.55) / std::sqrt(2 * 0.043 * 0.043);
  EXPECT_NEAR(anatomy->z, z, 1e-12);
  EXPECT_NEAR(anatomy->p_value, std::erfc(std::fabs(z) / std::sqrt(2.0)), 1e-12);
  EXPECT_EQ(anatomy->n_a, 135);
  EXPECT_EQ(anatomy->verdict, Verdict::kWarn) << "1.3 points";
  EXPECT_FALSE(anatomy->paired.has_value());
  EXPECT_EQ(arc_acc->verdict, Verdict::kFail) << "3 points";
  ASSERT_TRUE(arc_acc->paired.has_value());
  EXPECT_EQ(arc_acc->paired->questions, 10);
  EXPECT_EQ(arc_acc->paired->mcnemar.only_golden, 3);
  EXPECT_EQ(arc_acc->paired->mcnemar.only_target, 1);
  EXPECT_NEAR(arc_acc->paired->mcnemar.p_value, 0.625, 1e-15);
  EXPECT_NEAR(arc_acc->paired->agreement, 6.0 / 10, 1e-15);
  EXPECT_EQ(r->verdict, Verdict::kFail);
  auto j = nlohmann::json::parse(lm_eval_json(*r));
  EXPECT_EQ(j["schema"], "parity.eval.lmeval/2");
  EXPECT_TRUE(j["metrics"][0].contains("paired"));
  // Not a results file.
  auto bad = compare_lm_eval(fixture("mc_golden.jsonl"), fixture("lmeval_b.json"), {}, {}, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("mc_golden.jsonl"), std::string::npos);
}
