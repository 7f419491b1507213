// The rounding-noise model: unit roundoffs, expected error growth, classification boundaries, and the
// observed error taken from each kind of row.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "parity/compare.h"
#include "parity/noise.h"

namespace parity {
namespace {

TEST(NoiseModel, UnitRoundoffPerDtype) {
  EXPECT_DOUBLE_EQ(unit_roundoff(DType::kF32), std::ldexp(1.0, -24));
  EXPECT_DOUBLE_EQ(unit_roundoff(DType::kF16), std::ldexp(1.0, -11));
  EXPECT_DOUBLE_EQ(unit_roundoff(DType::kBF16), std::ldexp(1.0, -8));
  EXPECT_DOUBLE_EQ(unit_roundoff(DType::kF8E4M3), std::ldexp(1.0, -4));
  EXPECT_DOUBLE_EQ(unit_roundoff(DType::kF8E5M2), std::ldexp(1.0, -3));
  EXPECT_DOUBLE_EQ(unit_roundoff(DType::kF64), std::ldexp(1.0, -53));
  EXPECT_EQ(unit_roundoff(DType::kI64), 0.0);
  // The lower-precision side decides.
  EXPECT_DOUBLE_EQ(pair_unit_roundoff(DType::kF32, DType::kBF16), std::ldexp(1.0, -8));
  EXPECT_DOUBLE_EQ(pair_unit_roundoff(DType::kF16, DType::kBF16), std::ldexp(1.0, -8));
}

TEST(NoiseModel, ExpectedErrorGrowsWithSqrtLogOfReductionLength) {
  const double u = std::ldexp(1.0, -8);
  EXPECT_DOUBLE_EQ(expected_rounding_error(u, 1), u);
  EXPECT_DOUBLE_EQ(expected_rounding_error(u, 0), u);  // unknown = elementwise
  EXPECT_DOUBLE_EQ(expected_rounding_error(u, 1024), u * std::sqrt(11.0));
  EXPECT_LT(expected_rounding_error(u, 64), expected_rounding_error(u, 4096));
}

TEST(NoiseModel, ClassBoundaries) {
  const double u = std::ldexp(1.0, -8);
  NoiseParams p;
  EXPECT_EQ(classify_noise(0.0, u, 64).cls, NoiseClass::kNoise);
  EXPECT_EQ(classify_noise(0.0, u, 64).ratio, 0.0);
  const double e = expected_rounding_error(u, 64);
  EXPECT_EQ(classify_noise(p.noise_max * e, u, 64).cls, NoiseClass::kNoise);
  EXPECT_EQ(classify_noise(p.noise_max * e * 1.01, u, 64).cls, NoiseClass::kElevated);
  EXPECT_EQ(classify_noise(p.structural_min * e, u, 64).cls, NoiseClass::kElevated);
  EXPECT_EQ(classify_noise(p.structural_min * e * 1.01, u, 64).cls, NoiseClass::kStructural);
  EXPECT_NEAR(classify_noise(3 * e, u, 64).ratio, 3.0, 1e-12);
  EXPECT_EQ(classify_noise(kNaN, u, 64).cls, NoiseClass::kUnknown);
  // Exact dtypes: any difference is structural.
  EXPECT_EQ(classify_noise(1e-9, 0.0, 1).cls, NoiseClass::kStructural);
  EXPECT_TRUE(std::isinf(classify_noise(1e-9, 0.0, 1).ratio));
  // Custom thresholds.
  NoiseParams tight{1.0, 2.0};
  EXPECT_EQ(classify_noise(1.5 * u, u, 1, tight).cls, NoiseClass::kElevated);
}

TEST(NoiseModel, ObservedErrorOfEachRowKind) {
  CompareRow t;
  t.mode = CompareMode::kTensor;
  PairMetrics m;
  m.rel_l2 = 0.01;
  m.compared = 10;
  t.metrics = m;
  EXPECT_DOUBLE_EQ(row_observed_error(t), 0.01);
  t.metrics->nonfinite_agree = false;
  t.metrics->nonfinite_mismatch = 3;
  EXPECT_TRUE(std::isinf(row_observed_error(t)));

  CompareRow s;
  s.mode = CompareMode::kStatistics;
  // A proven lower bound of rel_l2, every difference against ‖golden‖ = 10: |Δnorm| 0.02, |Δmax| 0.04,
  // √n·|Δmean| = 10 × 0.001; Min's own relative change (0.1/1e-6) must not count.
  Record golden_record, target_record;  // both store statistics (a statistics-mode dump)
  golden_record.stats = TensorStats{};  // values not set below are 0 (the default is NaN: not measured)
  golden_record.stats->max = golden_record.stats->mean = golden_record.stats->absmax = 0;
  golden_record.stats->l2norm = 10;
  golden_record.stats->min = 1e-6;
  golden_record.stats->numel = 100;
  target_record.stats = golden_record.stats;
  target_record.stats->l2norm = 10.02;
  target_record.stats->max = 0.04;
  target_record.stats->min = 1.1e-6;  // a relative change of 0.1
  target_record.stats->mean = 0.001;
  s.golden = &golden_record;
  s.target = &target_record;
  s.stats = StatsComparison{};
  EXPECT_DOUBLE_EQ(row_observed_error(s), 0.004);
  target_record.stats->mean = 0.01;  // √100 × 0.01 = 0.1 > 0.04
  EXPECT_DOUBLE_EQ(row_observed_error(s), 0.01);

  CompareRow c;
  c.mode = CompareMode::kChecksum;
  c.checksum_equal = true;
  EXPECT_EQ(row_observed_error(c), 0.0);
  c.checksum_equal = false;
  EXPECT_TRUE(std::isnan(row_observed_error(c)));
}

}  // namespace
}  // namespace parity

namespace parity {
namespace {

// parameter_update_differs: 8·g + 8·sqrt(g) + 32·u with a gradient, 0.5 without (docs/judgement.md).
TEST(ParameterUpdate, DiffersOnlyBeyondWhatTheGradientExplains) {
  const double f32u = std::ldexp(1.0, -24);
  // SGD under bf16: update and gradient differ alike (0.007): carried.
  EXPECT_FALSE(parameter_update_differs(0.007, 0.007, f32u));
  // Adam under bf16: a 0.25 update difference from a 0.007 gradient difference is within 8·sqrt(g) = 0.67.
  EXPECT_FALSE(parameter_update_differs(0.25, 0.007, f32u));
  // A learning rate 2×: the update differs by its own size while the gradient agrees to 0.007.
  EXPECT_TRUE(parameter_update_differs(1.0, 0.007, f32u));
  // Identical gradients: anything beyond the optimizer's own rounding (32 u) differs.
  EXPECT_FALSE(parameter_update_differs(16 * f32u, 0.0, f32u));
  EXPECT_TRUE(parameter_update_differs(0.1, 0.0, f32u));
  // No gradient compared: 0.5 of the update's size.
  EXPECT_FALSE(parameter_update_differs(0.3, kNaN, f32u));
  EXPECT_TRUE(parameter_update_differs(0.5, kNaN, f32u));
  // Nothing measured, or a gradient that is itself non-finite (its own row reports it).
  EXPECT_FALSE(parameter_update_differs(kNaN, 0.1, f32u));
  EXPECT_FALSE(parameter_update_differs(5.0, std::numeric_limits<double>::infinity(), f32u));
}

}  // namespace
}  // namespace parity
