// The one KL row policy and accumulator (parity/metrics.h, docs/metrics.md "KL divergence").
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "parity/metrics.h"

namespace parity {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double row_kl(std::vector<double> g, std::vector<double> t) {
  std::vector<double> scratch(g.size());
  return softmax_row_kl(g.data(), t.data(), static_cast<int64_t>(g.size()), scratch.data());
}

TEST(KlPolicy, ARowHasADistributionUnlessNanPlusInfOrAllMinusInf) {
  const std::vector<double> finite{1, 2, 3}, masked{0, -kInf, 1}, nan{0, NAN, 1}, pinf{0, kInf, 1},
      all_minus{-kInf, -kInf, -kInf};
  EXPECT_TRUE(kl_row_has_distribution(finite.data(), 3));
  EXPECT_TRUE(kl_row_has_distribution(masked.data(), 3));
  EXPECT_FALSE(kl_row_has_distribution(nan.data(), 3));
  EXPECT_FALSE(kl_row_has_distribution(pinf.data(), 3));
  EXPECT_FALSE(kl_row_has_distribution(all_minus.data(), 3));
  EXPECT_EQ(kl_row_skip(nan.data(), finite.data(), 3), KlSkip::kGolden);
  EXPECT_EQ(kl_row_skip(nan.data(), nan.data(), 3), KlSkip::kGolden);  // the golden is checked first
  EXPECT_EQ(kl_row_skip(finite.data(), pinf.data(), 3), KlSkip::kTarget);
  EXPECT_EQ(kl_row_skip(finite.data(), masked.data(), 3), KlSkip::kNone);
}

TEST(KlPolicy, RowKlIsTheSoftmaxKlWithMaskedTokens) {
  // p = softmax(0, 0) = (½, ½), q = softmax(0, log 3) = (¼, ¾): KL = ½ log 2 + ½ log(2/3).
  EXPECT_NEAR(row_kl({0, 0}, {0, std::log(3.0)}), 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3.0), 1e-15);
  EXPECT_EQ(row_kl({1, 2, 3}, {1, 2, 3}), 0.0);
  // Masked on both sides: p = 0 contributes nothing, the row's KL is finite (0 here).
  EXPECT_EQ(row_kl({0, -kInf, 1}, {0, -kInf, 1}), 0.0);
  // The target masks a token the golden gives mass: +Inf.
  EXPECT_EQ(row_kl({0, 0, 1}, {0, -kInf, 1}), kInf);
  EXPECT_TRUE(std::isnan(row_kl({0, NAN, 1}, {0, 0, 1})));
  EXPECT_TRUE(std::isnan(row_kl({0, 0, 1}, {0, kInf, 1})));
}

TEST(KlAccumulator, RunningSumsGiveLlamaCppsMeanAndUncertainty) {
  KlAccumulator acc;
  std::vector<double> v;
  for (int i = 0; i < 12; ++i) v.push_back(0.01 * (i + 1));
  double sum = 0, sum2 = 0;
  for (double x : v) {
    acc.add(x);
    sum += x;
    sum2 += x * x;
  }
  acc.add(std::nan(""), KlSkip::kTarget);
  acc.add(std::nan(""), KlSkip::kGolden);
  const KlSummary s = acc.finish();
  EXPECT_EQ(s.count, 12);
  EXPECT_EQ(s.skipped, 2);
  EXPECT_EQ(s.skipped_target, 1);
  EXPECT_EQ(s.max, 0.12);
  EXPECT_EQ(s.mean, sum / 12);  // token order, exactly
  const double f = sum / 12;
  EXPECT_EQ(s.unc, std::sqrt((sum2 / 12 - f * f) / 11));
}

TEST(KlAccumulator, UncertaintyIsZeroUpToTenRowsAndNothingIsNan) {
  KlAccumulator few;
  for (int i = 0; i < 10; ++i) few.add(i);
  EXPECT_EQ(few.finish().unc, 0.0);
  const KlSummary none = KlAccumulator{}.finish();
  EXPECT_TRUE(std::isnan(none.mean));
  EXPECT_TRUE(std::isnan(none.max));
  EXPECT_EQ(none.count, 0);
}

TEST(KlAccumulator, AddRowsIsAPairwiseMeanThatSkipsNan) {
  std::vector<double> rows(1000, 0.1);
  rows[3] = std::nan("");
  rows[500] = kInf;
  KlAccumulator acc;
  acc.add_rows(rows.data(), static_cast<int64_t>(rows.size()));
  const KlSummary s = acc.finish();
  EXPECT_EQ(s.count, 999);
  EXPECT_EQ(s.skipped, 1);
  EXPECT_EQ(s.mean, kInf);
  EXPECT_EQ(s.max, kInf);
}

}  // namespace
}  // namespace parity
