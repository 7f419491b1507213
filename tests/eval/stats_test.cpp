// PPL/KLD statistics helpers (llama.cpp definitions) on hand-computed values, and the seed thresholds.
#include <gtest/gtest.h>

#include <cmath>

#include "parity/eval.h"
#include "parity/thresholds.h"

using namespace parity::eval;

TEST(PplStats, MeanAndUncertaintyLikeLlamaCpp) {
  // x = 1..20: mean 10.5, Σx² = 2870, Σx²/n − mean² = 143.5 − 110.25 = 33.25, unc = sqrt(33.25/19).
  double s = 0, s2 = 0;
  for (int i = 1; i <= 20; ++i) { s += i; s2 += i * i; }
  ValueUnc v = mean_and_uncertainty(s, s2, 20);
  EXPECT_DOUBLE_EQ(v.value, 10.5);
  EXPECT_DOUBLE_EQ(v.unc, std::sqrt(33.25 / 19));
  EXPECT_EQ(mean_and_uncertainty(s, s2, 10).unc, 0.0) << "llama.cpp: no uncertainty with n <= 10";
  EXPECT_EQ(mean_and_uncertainty(0, 0, 0).value, 0.0);
  // cov of x and 2x over 1..20: (Σ2x²/n − mean·2mean)/(n−1) = 2·33.25/19.
  EXPECT_DOUBLE_EQ(covariance_of_means(s, 2 * s, 2 * s2, 20), 2 * 33.25 / 19);
  EXPECT_EQ(covariance_of_means(s, s, s2, 9), 0.0);
}

TEST(PplStats, PercentileInterpolation) {
  std::vector<double> v = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.5), 5.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.95), 9.5);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.001), 0.01);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 1.0), 10.0);
}

TEST(PplStats, CompareTokenHandComputed) {
  // p = (0.5, 0.25, 0.25), q = (0.25, 0.5, 0.25): KL = 0.5 ln 2 − 0.25 ln 2 = 0.25 ln 2.
  TokenDist p, q;
  p.logprob = {std::log(0.5), std::log(0.25), std::log(0.25)};
  q.logprob = {std::log(0.25), std::log(0.5), std::log(0.25)};
  p.error = q.error = {0, 0, 0};
  p.label = q.label = 1;
  p.label_logprob = std::log(0.25);
  q.label_logprob = std::log(0.5);
  p.argmax = 0;
  q.argmax = 1;
  TokenComparison t = compare_token(p, q);
  EXPECT_NEAR(t.kld, 0.25 * std::log(2.0), 1e-15);
  EXPECT_LE(t.kld_bound, 1e-11);
  EXPECT_DOUBLE_EQ(t.delta_p, 0.25);
  EXPECT_DOUBLE_EQ(t.nll_golden, std::log(4.0));
  EXPECT_FALSE(t.same_top);
  // q = 0 where p > 0: infinite divergence.
  q.logprob[2] = -INFINITY;
  EXPECT_TRUE(std::isinf(compare_token(p, q).kld));
}

TEST(PplStats, SeedThresholdsByDtype) {
  EXPECT_DOUBLE_EQ(default_ppl_thresholds("bf16").kld, 0.005);
  EXPECT_DOUBLE_EQ(default_ppl_thresholds("fp16").kld, 1e-4);
  EXPECT_DOUBLE_EQ(default_ppl_thresholds("float32").kld, 1e-4);  // compare's kl_pass (issue 32: was 1e-6)
  EXPECT_DOUBLE_EQ(default_ppl_thresholds().ppl_rel, 0.05);
  EXPECT_TRUE(std::isnan(default_ppl_thresholds().ppl_diff));  // absolute check off: PPL is judged relatively
  EXPECT_DOUBLE_EQ(ppl_thresholds_for_logits("f32", "bf16").kld, 0.005);
  EXPECT_DOUBLE_EQ(ppl_thresholds_for_logits("bf16", "f32").kld, 0.005);
  EXPECT_DOUBLE_EQ(ppl_thresholds_for_logits("f32", "f32").kld, 1e-4);
  // one owner: every dtype's eval bound is compare's kl_pass of it
  using parity::DType;
  for (DType dt : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64, DType::kF8E4M3, DType::kF8E5M2})
    EXPECT_EQ(default_ppl_thresholds(parity::dtype_name(dt)).kld, parity::default_thresholds().for_dtype(dt).kl_pass)
        << parity::dtype_name(dt);
  EXPECT_DOUBLE_EQ(ppl_thresholds_for_logits("", "f16").kld, 1e-4);
  EXPECT_DOUBLE_EQ(ppl_thresholds_for_logits("", "").kld, 0.005);
  EXPECT_NE(ppl_thresholds_for_logits("", "").kld_source.find("unknown"), std::string::npos);
}

// eval's token KLD follows the one KL row policy (parity/metrics.h, docs/metrics.md "KL divergence"):
// a masked vocabulary is a finite KLD equal to compare's row KL; a side without a distribution has none.
TEST(PplStats, CompareTokenFollowsTheSharedKlRowPolicy) {
  TokenDist p, q;
  p.logprob = {std::log(0.5), -INFINITY, std::log(0.5)};
  q.logprob = {std::log(0.25), -INFINITY, std::log(0.75)};
  p.error = q.error = {0, 0, 0};
  p.label = q.label = 0;
  std::vector<double> scratch(3);
  const double row = parity::softmax_row_kl(p.logprob.data(), q.logprob.data(), 3, scratch.data());
  EXPECT_NEAR(compare_token(p, q).kld, row, 1e-15);
  EXPECT_NEAR(row, 0.5 * std::log(2.0) + 0.5 * std::log(0.5 / 0.75), 1e-15);
  for (double bad : {NAN, INFINITY}) {
    TokenDist broken = q;
    broken.logprob[0] = bad;
    EXPECT_EQ(parity::kl_row_skip(p.logprob.data(), broken.logprob.data(), 3), parity::KlSkip::kTarget);
    EXPECT_TRUE(std::isnan(compare_token(p, broken).kld));
    EXPECT_TRUE(std::isnan(compare_token(broken, p).kld));
  }
  TokenDist all_masked = q;
  all_masked.logprob = {-INFINITY, -INFINITY, -INFINITY};
  EXPECT_TRUE(std::isnan(compare_token(p, all_masked).kld));
}

// eval's Σkld, Σkld² are the KL accumulator's: its finish is llama.cpp's mean ± unc of the same sums.
TEST(PplStats, KlAccumulatorIsLlamaCppsMeanAndUncertainty) {
  parity::KlAccumulator acc;
  double s = 0, s2 = 0;
  for (int i = 1; i <= 20; ++i) {
    acc.add(i * 1e-3);
    s += i * 1e-3;
    s2 += (i * 1e-3) * (i * 1e-3);
  }
  const parity::KlSummary k = acc.finish();
  const ValueUnc v = mean_and_uncertainty(s, s2, 20);
  EXPECT_EQ(k.mean, v.value);
  EXPECT_EQ(k.unc, v.unc);
}
