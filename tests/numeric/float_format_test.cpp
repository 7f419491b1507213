// Exhaustive decode/encode of every fp16, bf16 and fp8 bit pattern against the independent reference
// in reference.h, plus the rounding of exact ties and of values around each format's overflow and
// subnormal limits.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "numeric/reference.h"
#include "parity/dtype.h"

namespace {

using parity::DType;
using parity_test::RefFormat;

struct Case {
  DType dtype;
  RefFormat ref;
  uint32_t nan_pattern;  // canonical NaN parity emits
};

const Case kCases[] = {
    {DType::kF16, parity_test::kRefF16, 0x7E00},
    {DType::kBF16, parity_test::kRefBF16, 0x7FC0},
    {DType::kF8E4M3, parity_test::kRefE4M3, 0x7F},
    {DType::kF8E5M2, parity_test::kRefE5M2, 0x7E},
};

bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Reference encode: sign handled here, magnitude by nearest-value search.
uint32_t ref_encode(const Case& c, const std::vector<double>& values, double x) {
  const uint32_t sign = std::signbit(x) ? (1u << (c.ref.e + c.ref.m)) : 0u;
  if (std::isnan(x)) return c.nan_pattern;
  const uint32_t inf = ((1u << c.ref.e) - 1) << c.ref.m;
  const uint32_t overflow = c.ref.fn ? c.nan_pattern : inf;
  if (std::isinf(x)) return sign | overflow;
  const int64_t k = parity_test::ref_round_index(values, std::fabs(x));
  return sign | (k < 0 ? overflow : static_cast<uint32_t>(k));
}

class FloatFormatTest : public ::testing::TestWithParam<Case> {};

TEST_P(FloatFormatTest, EveryPatternDecodesLikeTheReference) {
  const Case& c = GetParam();
  const uint32_t n = 1u << c.ref.width();
  for (uint32_t b = 0; b < n; ++b) {
    ASSERT_TRUE(same(parity::decode_bits(c.dtype, b), parity_test::ref_decode(c.ref, b)))
        << parity::dtype_name(c.dtype) << " pattern 0x" << std::hex << b;
  }
}

TEST_P(FloatFormatTest, EveryPatternReencodesToItself) {
  const Case& c = GetParam();
  const uint32_t n = 1u << c.ref.width();
  for (uint32_t b = 0; b < n; ++b) {
    const double v = parity::decode_bits(c.dtype, b);
    const uint64_t back = parity::encode_rne(c.dtype, v);
    if (std::isnan(v)) {
      ASSERT_EQ(back, c.nan_pattern) << std::hex << b;
    } else {
      ASSERT_EQ(back, b) << parity::dtype_name(c.dtype) << " pattern 0x" << std::hex << b;
    }
  }
}

// Exact midpoints between adjacent values (ties) go to the even pattern; a nudge either side goes to the
// nearer neighbour. Checked against the reference and, for ties, against the even-mantissa rule directly.
TEST_P(FloatFormatTest, MidpointsRoundToEvenAndNudgesToNearest) {
  const Case& c = GetParam();
  const auto values = parity_test::ref_positive_values(c.ref);
  for (size_t k = 0; k + 1 < values.size(); ++k) {
    const double mid = 0.5 * (values[k] + values[k + 1]);  // exact in double: at most 25 significant bits
    for (double sign : {1.0, -1.0}) {
      const double x = sign * mid;
      const uint64_t got = parity::encode_rne(c.dtype, x);
      ASSERT_EQ(got, ref_encode(c, values, x)) << parity::dtype_name(c.dtype) << " tie " << x;
      const uint64_t mag = got & ((1u << (c.ref.e + c.ref.m)) - 1);
      const bool overflowed = k + 2 == values.size();
      if (!overflowed) {
        ASSERT_EQ(mag, k % 2 == 0 ? k : k + 1) << "tie " << x << " is not even";
      }
      const double below = std::nextafter(x, 0.0), above = std::nextafter(x, sign * HUGE_VAL);
      ASSERT_EQ(parity::encode_rne(c.dtype, below), ref_encode(c, values, below)) << below;
      ASSERT_EQ(parity::encode_rne(c.dtype, above), ref_encode(c, values, above)) << above;
      ASSERT_EQ(parity::encode_rne(c.dtype, below) & ((1u << (c.ref.e + c.ref.m)) - 1), k) << below;
    }
  }
}

TEST_P(FloatFormatTest, RandomDoublesMatchReference) {
  const Case& c = GetParam();
  const auto values = parity_test::ref_positive_values(c.ref);
  const parity::FloatFormat* f = parity::float_format(c.dtype);
  std::mt19937_64 rng(1234);
  const int lo = static_cast<int>(std::log2(f->min_subnormal)) - 3;
  const int hi = static_cast<int>(std::log2(f->max_finite)) + 3;
  std::uniform_int_distribution<int> ex(lo, hi);
  for (int i = 0; i < 200000; ++i) {
    const double mant = 1.0 + static_cast<double>(rng() >> 11) * 0x1p-53;
    const double x = std::ldexp((rng() & 1) ? -mant : mant, ex(rng));
    ASSERT_EQ(parity::encode_rne(c.dtype, x), ref_encode(c, values, x)) << parity::dtype_name(c.dtype) << " " << x;
  }
}

TEST_P(FloatFormatTest, OverflowBoundary) {
  const Case& c = GetParam();
  const parity::FloatFormat* f = parity::float_format(c.dtype);
  const auto values = parity_test::ref_positive_values(c.ref);
  const double max = f->max_finite;
  const double boundary = 0.5 * (max + values.back());  // max + half a top-binade ulp
  const uint64_t max_bits = parity::encode_rne(c.dtype, max);
  EXPECT_EQ(parity::decode_bits(c.dtype, max_bits), max);
  EXPECT_EQ(parity::encode_rne(c.dtype, std::nextafter(boundary, 0.0)), max_bits);
  const uint64_t over = parity::encode_rne(c.dtype, boundary);
  if (c.ref.fn) {
    // e4m3fn: 464 is a tie between 448 (S.1111.110, even) and the NaN pattern; it rounds to 448.
    EXPECT_EQ(over, max_bits);
    EXPECT_TRUE(std::isnan(parity::decode_bits(c.dtype, parity::encode_rne(c.dtype, std::nextafter(boundary, 1e300)))));
    EXPECT_TRUE(std::isnan(parity::round_to(c.dtype, 1e6)));
    EXPECT_TRUE(std::isnan(parity::round_to(c.dtype, HUGE_VAL)));
  } else {
    // IEEE: max_finite has an odd mantissa (all ones), so the tie goes up, to infinity.
    EXPECT_EQ(parity::round_to(c.dtype, boundary), HUGE_VAL);
    EXPECT_EQ(parity::round_to(c.dtype, -boundary), -HUGE_VAL);
    EXPECT_EQ(parity::round_to(c.dtype, 1e300), HUGE_VAL);
  }
}

TEST_P(FloatFormatTest, SubnormalBoundary) {
  const Case& c = GetParam();
  const parity::FloatFormat* f = parity::float_format(c.dtype);
  const double s = f->min_subnormal;
  EXPECT_EQ(parity::round_to(c.dtype, s), s);
  EXPECT_EQ(parity::encode_rne(c.dtype, 0.5 * s), 0u);                        // tie with 0: 0 is even
  EXPECT_EQ(parity::round_to(c.dtype, std::nextafter(0.5 * s, 1.0)), s);      // just above half: up
  EXPECT_EQ(parity::round_to(c.dtype, 1.5 * s), 2 * s);                       // tie 1|2: 2 is even
  EXPECT_EQ(parity::round_to(c.dtype, 2.5 * s), 2 * s);                       // tie 2|3: 2 is even
  EXPECT_EQ(parity::round_to(c.dtype, 1e-300), 0.0);
  EXPECT_TRUE(std::signbit(parity::round_to(c.dtype, -1e-300)));              // -0 keeps its sign
  EXPECT_EQ(parity::round_to(c.dtype, 4.9e-324), 0.0);                        // a double subnormal
  // The largest subnormal rounds up into the smallest normal when nudged past the midpoint.
  const double largest_sub = f->min_normal - s;
  EXPECT_EQ(parity::round_to(c.dtype, largest_sub), largest_sub);
  EXPECT_EQ(parity::round_to(c.dtype, f->min_normal - 0.5 * s), f->min_normal);  // tie: min_normal is even
  EXPECT_TRUE(parity::is_subnormal_in(c.dtype, largest_sub));
  EXPECT_TRUE(parity::is_subnormal_in(c.dtype, -s));
  EXPECT_FALSE(parity::is_subnormal_in(c.dtype, f->min_normal));
  EXPECT_FALSE(parity::is_subnormal_in(c.dtype, 0.0));
  EXPECT_EQ(parity::ulp_at(c.dtype, largest_sub), s);
  EXPECT_EQ(parity::ulp_at(c.dtype, 0.0), s);
}

TEST_P(FloatFormatTest, UlpIsTheGapToTheNextValue) {
  const Case& c = GetParam();
  const auto values = parity_test::ref_positive_values(c.ref);
  for (size_t k = 0; k + 1 < values.size(); ++k) {
    ASSERT_EQ(parity::ulp_at(c.dtype, values[k]), values[k + 1] - values[k]) << values[k];
    ASSERT_EQ(parity::ulp_at(c.dtype, -values[k]), values[k + 1] - values[k]) << -values[k];
  }
  EXPECT_TRUE(std::isnan(parity::ulp_at(c.dtype, HUGE_VAL)));
  EXPECT_TRUE(std::isnan(parity::ulp_at(c.dtype, std::nan(""))));
}

TEST_P(FloatFormatTest, SpecialValues) {
  const Case& c = GetParam();
  const uint32_t sign = 1u << (c.ref.e + c.ref.m);
  EXPECT_EQ(parity::encode_rne(c.dtype, std::nan("")), c.nan_pattern);
  EXPECT_EQ(parity::encode_rne(c.dtype, 0.0), 0u);
  EXPECT_EQ(parity::encode_rne(c.dtype, -0.0), sign);
  const uint32_t inf = ((1u << c.ref.e) - 1) << c.ref.m;
  EXPECT_EQ(parity::encode_rne(c.dtype, -HUGE_VAL), sign | (c.ref.fn ? c.nan_pattern : inf));
}

INSTANTIATE_TEST_SUITE_P(AllNarrowFormats, FloatFormatTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(parity::dtype_name(info.param.dtype)); });

TEST(FloatFormat, ParametersTable) {
  struct Row { DType t; int e, m, bias; double max, min_normal, min_sub; bool inf; };
  const Row rows[] = {
      {DType::kF64, 11, 52, 1023, std::numeric_limits<double>::max(), 0x1p-1022, 0x1p-1074, true},
      {DType::kF32, 8, 23, 127, 3.4028234663852886e38, 0x1p-126, 0x1p-149, true},
      {DType::kF16, 5, 10, 15, 65504.0, 0x1p-14, 0x1p-24, true},
      {DType::kBF16, 8, 7, 127, 3.3895313892515355e38, 0x1p-126, 0x1p-133, true},
      {DType::kF8E4M3, 4, 3, 7, 448.0, 0x1p-6, 0x1p-9, false},
      {DType::kF8E5M2, 5, 2, 15, 57344.0, 0x1p-14, 0x1p-16, true},
  };
  for (const Row& r : rows) {
    const parity::FloatFormat* f = parity::float_format(r.t);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->dtype, r.t);
    EXPECT_EQ(f->exponent_bits, r.e);
    EXPECT_EQ(f->mantissa_bits, r.m);
    EXPECT_EQ(f->exponent_bias, r.bias);
    EXPECT_EQ(f->max_finite, r.max) << parity::dtype_name(r.t);
    EXPECT_EQ(f->min_normal, r.min_normal);
    EXPECT_EQ(f->min_subnormal, r.min_sub);
    EXPECT_EQ(f->has_infinity, r.inf);
    EXPECT_EQ(f->nan_is_all_ones, !r.inf);
    EXPECT_EQ(f->epsilon, std::ldexp(1.0, -r.m));
    EXPECT_EQ(f->unit_roundoff, std::ldexp(1.0, -r.m - 1));
  }
  EXPECT_EQ(parity::float_format(DType::kI32), nullptr);
}

TEST(FloatFormat, UlpAtKnownValues) {
  EXPECT_EQ(parity::ulp_at(DType::kF16, 1.0), 0x1p-10);
  EXPECT_EQ(parity::ulp_at(DType::kF16, 1.5), 0x1p-10);
  EXPECT_EQ(parity::ulp_at(DType::kF16, 65504.0), 32.0);
  EXPECT_EQ(parity::ulp_at(DType::kF16, 1e5), 64.0);  // beyond max: the binade of |x| still defines it
  EXPECT_EQ(parity::ulp_at(DType::kBF16, 1.0), 0x1p-7);
  EXPECT_EQ(parity::ulp_at(DType::kBF16, 3.0), 0x1p-6);
  EXPECT_EQ(parity::ulp_at(DType::kF32, 1.0), 0x1p-23);
  EXPECT_EQ(parity::ulp_at(DType::kF32, 1e-45), 0x1p-149);
  EXPECT_EQ(parity::ulp_at(DType::kF64, 1.0), 0x1p-52);
  EXPECT_EQ(parity::ulp_at(DType::kF8E4M3, 448.0), 32.0);
  EXPECT_EQ(parity::ulp_at(DType::kF8E4M3, 1.0), 0.125);
  EXPECT_EQ(parity::ulp_at(DType::kF8E5M2, 1.0), 0.25);
  EXPECT_EQ(parity::ulp_at(DType::kI32, 12345.0), 1.0);
}

// f32 encode is the hardware conversion; check it agrees with the reference rule at ties and limits.
TEST(FloatFormat, F32RoundingAtTiesAndLimits) {
  EXPECT_EQ(parity::encode_rne(DType::kF32, 1.0 + 0x1p-24), 0x3F800000u);                  // tie -> even
  EXPECT_EQ(parity::encode_rne(DType::kF32, 1.0 + 3 * 0x1p-24), 0x3F800002u);              // tie -> even
  EXPECT_EQ(parity::encode_rne(DType::kF32, std::nextafter(1.0 + 0x1p-24, 2.0)), 0x3F800001u);
  const double fmax = 3.4028234663852886e38, half_ulp = 0x1p103;
  EXPECT_EQ(parity::round_to(DType::kF32, fmax + half_ulp), HUGE_VAL);
  EXPECT_EQ(parity::round_to(DType::kF32, -1e300), -HUGE_VAL);
  EXPECT_EQ(parity::round_to(DType::kF32, std::nextafter(fmax + half_ulp, 0.0)), fmax);
  EXPECT_EQ(parity::encode_rne(DType::kF32, 0x1p-150), 0u);
  EXPECT_EQ(parity::encode_rne(DType::kF32, std::nextafter(0x1p-150, 1.0)), 1u);
  EXPECT_EQ(parity::encode_rne(DType::kF32, std::nan("")), 0x7FC00000u);
  EXPECT_EQ(parity::decode_bits(DType::kF32, 0x00000001u), 0x1p-149);
  EXPECT_EQ(parity::decode_bits(DType::kF64, std::bit_cast<uint64_t>(0.1)), 0.1);
}

#ifdef __FLT16_MANT_DIG__
// The compiler's _Float16 is an independent implementation of binary16 with RNE conversions.
TEST(FloatFormat, F16AgreesWithCompilerFloat16) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    _Float16 v;
    std::memcpy(&v, &h, 2);
    ASSERT_TRUE(same(parity::decode_bits(DType::kF16, b), static_cast<double>(v))) << std::hex << b;
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const double mant = 1.0 + static_cast<double>(rng() >> 11) * 0x1p-53;
    const double x = std::ldexp((rng() & 1) ? -mant : mant, static_cast<int>(rng() % 50) - 28);
    const _Float16 v = static_cast<_Float16>(x);
    uint16_t h;
    std::memcpy(&h, &v, 2);
    ASSERT_EQ(parity::encode_rne(DType::kF16, x), h) << x;
  }
}
#endif

}  // namespace
