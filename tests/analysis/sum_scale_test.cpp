// Sums that cancel (src/analysis/sum_scale.cpp; docs/judgement.md "Sums that cancel"): the gradient arriving
// at a norm's rsqrt is Σ_i go_i·x_i over the hidden dimension, and is judged against its terms' scale.
#include <gtest/gtest.h>

#include <cmath>

#include "parity/analysis.h"
#include "synth.h"

namespace parity {
namespace {

constexpr double kU = 0x1p-24;  // fp32

// Gives a row's records a shape and golden statistics (the value identity consumers are found by) and its
// metrics the same norm and element count.
void shape_row(CompareRow& row, Shape shape, double l2norm, double mean) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  TensorStats s;
  s.l2norm = l2norm;
  s.mean = mean;
  s.min = mean - 1;
  s.max = mean + 1;
  s.numel = numel;
  for (const Record* r : {row.golden, row.target}) {
    Record& rec = const_cast<Record&>(*r);
    rec.shape = shape;
    rec.stats = s;
  }
  row.metrics->numel = row.metrics->compared = numel;
  row.metrics->golden.l2norm = l2norm;
}

// An RMSNorm's tail in a 4 × 64 activation: add(eps) → rsqrt → mul(x, r), then backward. The gradient
// arriving at rsqrt (‖g‖ = 0.016) sums go·x over 64 features: ‖terms‖ ≈ ‖go‖·‖x‖·sqrt(m·n/(N·N)) = 1.6, so
// it cancelled to 1/100 of its terms and its relative error `rel` is 100 roundings of them.
struct NormTail {
  test::Synth s;
  size_t rsqrt_grad = 0, add_grad = 0;
  explicit NormTail(double rel, bool read_twice = false) {
    shape_row(s.row("n", "add", "forward", "output", 0, 0), {4, 1}, 0.5, 0.25);
    shape_row(s.row("n", "rsqrt", "forward", "input", 0, 0), {4, 1}, 0.5, 0.25);
    shape_row(s.row("n", "rsqrt", "forward", "output", 0, 0), {4, 1}, 4.0, 2.0);
    shape_row(s.row("n", "mul", "forward", "input", 0, 0), {4, 64}, 16.0, 0.0);
    shape_row(s.row("n", "mul", "forward", "input", 1, 0), {4, 1}, 4.0, 2.0);
    shape_row(s.row("n", "mul", "forward", "output", 0, 0), {4, 64}, 64.0, 0.0);
    if (read_twice) shape_row(s.row("n", "sub", "forward", "input", 0, 0), {4, 1}, 4.0, 2.0);
    shape_row(s.row("n", "mul", "backward", "input", 0, 0), {4, 64}, 1.6, 0.0);
    rsqrt_grad = s.result.rows.size();
    shape_row(s.row("n", "rsqrt", "backward", "input", 0, rel), {4, 1}, 0.016, 0.001);
    add_grad = s.result.rows.size();
    shape_row(s.row("n", "add", "backward", "input", 0, rel), {4, 1}, 0.3, 0.01);
  }
};

TEST(SumScale, GradientOfABroadcastOperandIsJudgedAgainstItsTerms) {
  const double rel = 100 * 1.5 * kU * std::sqrt(1.0 + 6);  // 1.5 roundings of ‖terms‖ (n = 64), 150 of ‖g‖
  NormTail t(rel);
  classify_rows(t.s.result);
  const CompareRow& r = t.s.result.rows[t.rsqrt_grad];
  EXPECT_TRUE(r.cancelled);
  EXPECT_NEAR(r.sum_cancellation, 100.0, 0.5);
  EXPECT_EQ(r.noise, NoiseClass::kNoise) << r.noise_ratio;
  EXPECT_NEAR(r.noise_ratio, 1.5, 0.05);
  // The eps add's gradient is rsqrt's elementwise backward of it: same relative error, same scale.
  const CompareRow& a = t.s.result.rows[t.add_grad];
  EXPECT_NEAR(a.sum_cancellation, 100.0, 0.5);
  EXPECT_EQ(a.noise, NoiseClass::kNoise) << a.noise_ratio;
}

TEST(SumScale, BeyondTheTermsRoundingStillFails) {
  const double rel = 100 * 60 * kU * std::sqrt(1.0 + 6);  // 60 roundings of ‖terms‖
  NormTail t(rel);
  classify_rows(t.s.result);
  EXPECT_EQ(t.s.result.rows[t.rsqrt_grad].noise, NoiseClass::kStructural);
  EXPECT_EQ(t.s.result.rows[t.add_grad].noise, NoiseClass::kStructural);
}

TEST(SumScale, AnOutputReadTwiceGetsNoScale) {
  // Its gradient is the sum of two consumers' contributions: the terms of one do not bound it.
  NormTail t(100 * 1.5 * kU * std::sqrt(1.0 + 6), /*read_twice=*/true);
  classify_rows(t.s.result);
  const CompareRow& r = t.s.result.rows[t.rsqrt_grad];
  EXPECT_FALSE(r.cancelled);
  EXPECT_EQ(r.noise, NoiseClass::kStructural) << r.noise_ratio;
}

TEST(SumScale, ASumThatDoesNotCancelKeepsItsOwnScale) {
  // ‖g‖ = 1.6 = ‖terms‖: nothing cancelled, the row is judged against itself as before.
  NormTail t(8 * kU);
  const_cast<Record&>(*t.s.result.rows[t.rsqrt_grad].golden).stats->l2norm = 1.6;
  t.s.result.rows[t.rsqrt_grad].metrics->golden.l2norm = 1.6;
  classify_rows(t.s.result);
  const CompareRow& r = t.s.result.rows[t.rsqrt_grad];
  EXPECT_FALSE(r.cancelled);
  EXPECT_EQ(r.sum_cancellation, 0.0f);
  EXPECT_NEAR(r.noise_ratio, 8.0, 0.01);  // rsqrt is elementwise: n = 1
}

}  // namespace
}  // namespace parity
