// The array rounding kernels (parity/rounding.h) against the scalar encode_rne()/decode_bits() pair, whose
// own exhaustive tests are in float_format_test.cpp: every float32 pattern on a stride through all 2^32 (plus
// random low bits), the edge values of each format, saturation, flush-to-zero, TF32 and int8.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "parity/dtype.h"
#include "parity/rounding.h"

namespace {

using parity::DType;

bool same(double want, float got) {
  if (std::isnan(want)) return std::isnan(got);
  return static_cast<double>(got) == want && std::signbit(got) == std::signbit(want);
}

// ~1.3 M patterns: a prime stride through the whole 32-bit space (every exponent, both signs, NaN and inf
// payloads) with random low bits, then each format's edges: ties at every binade boundary are covered by
// the explicit list below.
std::vector<float> sample_patterns() {
  std::vector<float> v;
  std::mt19937 g(7);
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) {
    v.push_back(std::bit_cast<float>(static_cast<uint32_t>(b ^ (g() & 0xFFF))));
  }
  return v;
}

std::vector<float> edge_values(DType t) {
  const parity::FloatFormat* f = parity::float_format(t);
  std::vector<float> v = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min()};
  const double anchors[] = {f->max_finite, f->min_normal, f->min_subnormal, 1.0, 1.5, 3.0};
  for (double a : anchors) {
    const double ulp = parity::ulp_at(t, a);
    // exact values, exact midpoints (ties), and one float32 step either side of each midpoint
    for (double x : {a, a + ulp / 2, a - ulp / 4, a + ulp, a + ulp * 1.5, a - parity::ulp_at(t, a * 0.99) / 2}) {
      const float fx = static_cast<float>(x);
      for (float y : {fx, std::nextafter(fx, 0.0f), std::nextafter(fx, INFINITY)}) {
        v.push_back(y);
        v.push_back(-y);
      }
    }
  }
  return v;
}

class RoundArrayTest : public ::testing::TestWithParam<DType> {};

TEST_P(RoundArrayTest, MatchesScalarEncodeDecode) {
  const DType t = GetParam();
  std::vector<float> in = sample_patterns();
  for (float e : edge_values(t)) in.push_back(e);
  std::vector<float> out = in;
  ASSERT_TRUE(parity::round_f32_inplace(t, out.data(), static_cast<int64_t>(out.size())).ok());
  int64_t bad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const double want = parity::round_to(t, in[i]);
    if (!same(want, out[i]) && ++bad <= 5) {
      ADD_FAILURE() << parity::dtype_name(t) << " x=" << std::hexfloat << in[i] << " got " << out[i] << " want "
                    << want;
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST_P(RoundArrayTest, SaturatingClampsOverflowAndInfinityToMaxFinite) {
  const DType t = GetParam();
  const double max = parity::float_format(t)->max_finite;
  std::vector<float> in = sample_patterns();
  for (float e : edge_values(t)) in.push_back(e);
  std::vector<float> out = in;
  ASSERT_TRUE(parity::round_f32_inplace(t, out.data(), static_cast<int64_t>(out.size()),
                                        {parity::Overflow::kSaturate, false})
                  .ok());
  for (size_t i = 0; i < in.size(); ++i) {
    double want = parity::round_to(t, in[i]);
    if (!std::isnan(in[i]) && (std::isnan(want) || std::fabs(want) > max)) want = std::copysign(max, in[i]);
    ASSERT_TRUE(same(want, out[i])) << parity::dtype_name(t) << " x=" << std::hexfloat << in[i] << " got "
                                    << out[i] << " want " << want;
  }
}

TEST_P(RoundArrayTest, FlushToZeroDropsResultsBelowTheSmallestNormal) {
  const DType t = GetParam();
  const double min_normal = parity::float_format(t)->min_normal;
  std::vector<float> in = edge_values(t);
  for (int k = -30; k <= 4; ++k) in.push_back(static_cast<float>(std::ldexp(1.3, k) * min_normal));
  std::vector<float> out = in;
  ASSERT_TRUE(parity::round_f32_inplace(t, out.data(), static_cast<int64_t>(out.size()),
                                        {parity::Overflow::kFormat, true})
                  .ok());
  int flushed = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    double want = parity::round_to(t, in[i]);
    if (std::fabs(want) < min_normal) {
      flushed += want != 0.0;
      want = std::copysign(0.0, in[i]);
    }
    ASSERT_TRUE(same(want, out[i])) << parity::dtype_name(t) << " x=" << std::hexfloat << in[i];
  }
  EXPECT_GT(flushed, 0);  // the list does reach the format's subnormals
}

INSTANTIATE_TEST_SUITE_P(Formats, RoundArrayTest,
                         ::testing::Values(DType::kF16, DType::kBF16, DType::kF8E4M3, DType::kF8E5M2),
                         [](const auto& info) { return std::string(parity::dtype_name(info.param)); });

// Reference TF32 (and any mantissa width with float32's exponent range): x = k * 2^(e - m) with e the binade
// of |x| (at least -126, where float32's subnormals start), k rounded to nearest even in double.
double ref_round_mantissa(float x, int m) {
  if (!std::isfinite(x) || x == 0.0f) return x;
  int e = 0;
  std::frexp(static_cast<double>(x), &e);  // |x| in [2^(e-1), 2^e)
  const double q = std::ldexp(1.0, std::max(e - 1, -126) - m);
  const double r = std::nearbyint(static_cast<double>(x) / q) * q;
  if (std::fabs(r) > std::numeric_limits<float>::max()) return std::copysign(INFINITY, x);
  return r == 0.0 ? std::copysign(0.0, x) : r;
}

TEST(RoundMantissa, Tf32AndBf16WidthsMatchTheReference) {
  std::vector<float> in = sample_patterns();
  for (float e : edge_values(DType::kBF16)) in.push_back(e);
  for (int m : {10, 7, 1, 22}) {
    std::vector<float> out = in;
    ASSERT_TRUE(parity::round_f32_mantissa_inplace(out.data(), static_cast<int64_t>(out.size()), m).ok());
    for (size_t i = 0; i < in.size(); ++i) {
      ASSERT_TRUE(same(ref_round_mantissa(in[i], m), out[i])) << "m=" << m << " x=" << std::hexfloat << in[i];
    }
  }
  float x = 1.0f;
  EXPECT_FALSE(parity::round_f32_mantissa_inplace(&x, 1, 24).ok());
  EXPECT_FALSE(parity::round_f32_mantissa_inplace(&x, 1, 0).ok());  // ties-to-even needs a fraction bit
}

TEST(RoundMantissa, SevenBitsIsBf16) {
  std::vector<float> a = sample_patterns();
  std::vector<float> b = a;
  ASSERT_TRUE(parity::round_f32_mantissa_inplace(a.data(), static_cast<int64_t>(a.size()), 7).ok());
  ASSERT_TRUE(parity::round_f32_inplace(DType::kBF16, b.data(), static_cast<int64_t>(b.size())).ok());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(same(b[i], a[i])) << std::hexfloat << b[i];
}

TEST(FlushSubnormals, OnlyFloat32SubnormalsBecomeSignedZero) {
  std::vector<float> v = {std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::min(), -1e-39f, 1.0f, NAN, -INFINITY, 0.0f};
  parity::flush_subnormals_f32_inplace(v.data(), static_cast<int64_t>(v.size()));
  EXPECT_TRUE(same(0.0, v[0]));
  EXPECT_TRUE(same(-0.0, v[1]));
  EXPECT_TRUE(same(std::numeric_limits<float>::min(), v[2]));
  EXPECT_TRUE(same(-0.0, v[3]));
  EXPECT_EQ(v[4], 1.0f);
  EXPECT_TRUE(std::isnan(v[5]));
  EXPECT_TRUE(same(-INFINITY, v[6]));
}

TEST(FakeQuantInt8, SymmetricRoundingClampAndNaN) {
  std::vector<float> v = {0.0f, 0.5f, 1.5f, 2.5f, -2.5f, 126.6f, 300.0f, -1e9f, INFINITY, NAN};
  ASSERT_TRUE(parity::fake_quant_int8_inplace(v.data(), static_cast<int64_t>(v.size()), 1.0f).ok());
  const float want[] = {0.0f, 0.0f, 2.0f, 2.0f, -2.0f, 127.0f, 127.0f, -127.0f, 127.0f};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(v[i], want[i]) << i;  // ties to even: 0.5 -> 0, 2.5 -> 2
  EXPECT_TRUE(std::isnan(v[9]));
  float s = 0.0f;
  EXPECT_FALSE(parity::fake_quant_int8_inplace(v.data(), 1, s).ok());
}

TEST(FakeQuantInt8, PerChannelUsesEachChannelsScale) {
  // [outer=2, channels=3, inner=2] and the channels-last form [outer=4, channels=3, inner=1]
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = static_cast<float>(i) * 0.37f - 2.0f;
  float amax[3];
  parity::finite_absmax_channels_f32(v.data(), 2, 3, 2, amax);
  float scales[3];
  for (int c = 0; c < 3; ++c) scales[c] = amax[c] / 127.0f;
  std::vector<float> q = v;
  ASSERT_TRUE(parity::fake_quant_int8_channels_inplace(q.data(), 2, 3, 2, scales).ok());
  for (int o = 0; o < 2; ++o) {
    for (int c = 0; c < 3; ++c) {
      for (int i = 0; i < 2; ++i) {
        const int k = (o * 3 + c) * 2 + i;
        float one = v[k];
        ASSERT_TRUE(parity::fake_quant_int8_inplace(&one, 1, scales[c]).ok());
        EXPECT_EQ(q[k], one) << k;
        EXPECT_LE(std::fabs(q[k] - v[k]), scales[c] / 2 * 1.0001f);
      }
    }
  }
  parity::finite_absmax_channels_f32(v.data(), 4, 3, 1, amax);
  EXPECT_EQ(amax[0], std::max({std::fabs(v[0]), std::fabs(v[3]), std::fabs(v[6]), std::fabs(v[9])}));
}

}  // namespace
