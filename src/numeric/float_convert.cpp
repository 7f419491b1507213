// Bit-exact decode and round-to-nearest-even encode for every float format (include/parity/dtype.h).
//
// One generic definition driven by the FloatFormat record serves f16, bf16, e4m3fn and e5m2 (and f32,
// for which it agrees with the hardware conversion); the tests check it exhaustively against an
// independent ldexp-based reference and against the compiler's _Float16.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "parity/dtype.h"

namespace parity {
namespace {

inline uint64_t double_bits(double x) { return std::bit_cast<uint64_t>(x); }
inline double bits_double(uint64_t b) { return std::bit_cast<double>(b); }

// Canonical quiet NaN of a format: exponent all ones and the top mantissa bit set (IEEE 754 §6.2.1);
// e4m3fn has a single NaN magnitude, S.1111.111.
uint64_t canonical_nan(const FloatFormat& f) {
  const int m = f.mantissa_bits;
  const uint64_t exp_ones = ((uint64_t{1} << f.exponent_bits) - 1) << m;
  if (f.nan_is_all_ones) return exp_ones | ((uint64_t{1} << m) - 1);
  return exp_ones | (uint64_t{1} << (m - 1));
}

// Decode a format narrower than double by re-biasing its fields into a double's fields (exact: every
// such value is a normal double). Subnormal inputs are normalised with the position of the leading one.
double decode_generic(const FloatFormat& f, uint64_t bits) {
  const int m = f.mantissa_bits;
  const int e = f.exponent_bits;
  const uint64_t sign = (bits >> (m + e)) & 1;
  const uint64_t exp = (bits >> m) & ((uint64_t{1} << e) - 1);
  const uint64_t man = bits & ((uint64_t{1} << m) - 1);
  const uint64_t exp_ones = (uint64_t{1} << e) - 1;
  const uint64_t dsign = sign << 63;
  if (exp == exp_ones) {
    if (f.has_infinity) {
      if (man == 0) return bits_double(dsign | (uint64_t{0x7FF} << 52));
      return std::numeric_limits<double>::quiet_NaN();
    }
    if (f.nan_is_all_ones && man == (uint64_t{1} << m) - 1) return std::numeric_limits<double>::quiet_NaN();
    // e4m3fn: the top binade is finite; fall through to the normal case.
  }
  if (exp == 0) {
    if (man == 0) return bits_double(dsign);
    // man * 2^(1-bias-m), with man = 2^p * (1 + r/2^p): exponent p + 1 - bias - m.
    const int p = std::bit_width(man) - 1;
    const int64_t unbiased = p + 1 - f.exponent_bias - m;
    const uint64_t frac = (man - (uint64_t{1} << p)) << (52 - p);
    return bits_double(dsign | (static_cast<uint64_t>(unbiased + 1023) << 52) | frac);
  }
  const int64_t unbiased = static_cast<int64_t>(exp) - f.exponent_bias;
  return bits_double(dsign | (static_cast<uint64_t>(unbiased + 1023) << 52) | (man << (52 - m)));
}

// Round-to-nearest, ties-to-even of a double into a format of at most 32 bits (IEEE 754 §4.3.1).
//
// |x| = sig * 2^(E-52) with sig the 53-bit significand. The target keeps m fraction bits in its normal
// range (target exponent te = E + bias >= 1) and m - (1 - te) bits below it, so the number of low bits
// dropped is shift = 52 - m (+ 1 - te when subnormal). Rounding the integer sig >> shift by the dropped
// remainder, then adding it to the biased exponent field, lets a carry out of the mantissa move into the
// next binade (or from the subnormal range into the smallest normal, or past max_finite) on its own.
uint64_t encode_generic(const FloatFormat& f, double x) {
  const int m = f.mantissa_bits;
  const int e = f.exponent_bits;
  const uint64_t sign_bit = uint64_t{1} << (m + e);
  const uint64_t exp_ones = (uint64_t{1} << e) - 1;
  if (std::isnan(x)) return canonical_nan(f);
  const uint64_t sign = std::signbit(x) ? sign_bit : 0;
  if (std::isinf(x)) return f.has_infinity ? (sign | (exp_ones << m)) : (sign | canonical_nan(f));

  const uint64_t u = double_bits(x) & ~(uint64_t{1} << 63);
  const int64_t dexp = static_cast<int64_t>(u >> 52);
  if (dexp == 0) return sign;  // zero or a double subnormal (< 2^-1022): far below any target's min_subnormal
  const uint64_t sig = (u & ((uint64_t{1} << 52) - 1)) | (uint64_t{1} << 52);
  const int64_t te = dexp - 1023 + f.exponent_bias;

  // Anything at or above 2^(emax+1) overflows regardless of rounding; clamp before shifting to keep the
  // arithmetic in range.
  const int64_t te_limit = static_cast<int64_t>(exp_ones) + 1;
  uint64_t mag;
  if (te > te_limit) {
    mag = (te_limit << m);  // beyond every finite pattern; handled by the overflow test below
  } else {
    int64_t shift = 52 - m;
    if (te < 1) shift += 1 - te;
    if (shift > 54) return sign;  // |x| < min_subnormal / 2: rounds to zero (sig < 2^53)
    uint64_t q = sig >> shift;
    const uint64_t rem = sig & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    // Normal: field = te << m | (q - 2^m) = ((te - 1) << m) + q. Subnormal: field = q.
    mag = te >= 1 ? ((static_cast<uint64_t>(te - 1) << m) + q) : q;
  }

  if (f.has_infinity) {
    if (mag >= (exp_ones << m)) return sign | (exp_ones << m);  // rounded past max_finite: inf
  } else {
    // e4m3fn: the largest finite magnitude is S.1111.110; rounding to the NaN pattern or beyond is
    // overflow, which the "fn" convention (PyTorch, ml_dtypes casts) maps to NaN.
    if (mag >= canonical_nan(f)) return sign | canonical_nan(f);
  }
  return sign | mag;
}

}  // namespace

double decode_bits(DType t, uint64_t bits) {
  switch (t) {
    case DType::kF64: return bits_double(bits);
    case DType::kF32: return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits)));
    case DType::kF16:
    case DType::kBF16:
    case DType::kF8E4M3:
    case DType::kF8E5M2: {
      const FloatFormat* f = float_format(t);
      const int width = 1 + f->exponent_bits + f->mantissa_bits;
      return decode_generic(*f, bits & ((uint64_t{1} << width) - 1));
    }
    case DType::kI8: return static_cast<double>(static_cast<int8_t>(bits));
    case DType::kI16: return static_cast<double>(static_cast<int16_t>(bits));
    case DType::kI32: return static_cast<double>(static_cast<int32_t>(bits));
    case DType::kI64: return static_cast<double>(static_cast<int64_t>(bits));
    case DType::kU8: return static_cast<double>(static_cast<uint8_t>(bits));
    case DType::kBool: return (bits & 0xFF) != 0 ? 1.0 : 0.0;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

uint64_t encode_rne(DType t, double x) {
  switch (t) {
    case DType::kF64: return double_bits(x);
    case DType::kF32: {
      // The double -> float conversion is IEEE round-to-nearest-even in the default rounding mode, with
      // overflow to inf; NaN is canonicalised like the narrow formats.
      if (std::isnan(x)) return 0x7FC00000u;
      // |x| >= FLT_MAX + ulp/2 rounds to inf; made explicit because C++ leaves the conversion of an
      // out-of-range double undefined ([conv.double]) even though IEEE hardware returns inf.
      if (std::fabs(x) >= 0x1.ffffffp127) return std::signbit(x) ? 0xFF800000u : 0x7F800000u;
      return std::bit_cast<uint32_t>(static_cast<float>(x));
    }
    case DType::kF16:
    case DType::kBF16:
    case DType::kF8E4M3:
    case DType::kF8E5M2:
      return encode_generic(*float_format(t), x);
    default:
      break;
  }
  // Integer dtypes: nearest integer, ties to even, saturated to the type's range; NaN -> 0. (Not a
  // cast that C++ defines for out-of-range values, hence the clamps.)
  if (t == DType::kBool) return (x != 0.0 && !std::isnan(x)) ? 1 : 0;
  if (std::isnan(x)) return 0;
  double lo = 0, hi = 0;
  int width = 64;
  switch (t) {
    case DType::kI8: lo = -128.0; hi = 127.0; width = 8; break;
    case DType::kI16: lo = -32768.0; hi = 32767.0; width = 16; break;
    case DType::kI32: lo = -2147483648.0; hi = 2147483647.0; width = 32; break;
    case DType::kU8: lo = 0.0; hi = 255.0; width = 8; break;
    default: lo = -9223372036854775808.0; hi = 9223372036854775807.0; width = 64; break;
  }
  const double r = std::nearbyint(x);
  if (t == DType::kI64) {
    if (r >= 9223372036854775808.0) return static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (r < lo) return static_cast<uint64_t>(std::numeric_limits<int64_t>::min());
    return static_cast<uint64_t>(static_cast<int64_t>(r));
  }
  const double c = r < lo ? lo : (r > hi ? hi : r);
  const uint64_t mask = (uint64_t{1} << width) - 1;
  return static_cast<uint64_t>(static_cast<int64_t>(c)) & mask;
}

double round_to(DType t, double x) { return decode_bits(t, encode_rne(t, x)); }

double ulp_at(DType t, double x) {
  if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
  const FloatFormat* f = float_format(t);
  if (f == nullptr) return 1.0;  // integers: adjacent representable values are 1 apart
  const double a = std::fabs(x);
  if (a < f->min_normal) return f->min_subnormal;
  // a = frac * 2^ex with frac in [0.5, 1): the binade of a is [2^(ex-1), 2^ex), whose spacing is
  // 2^(ex-1-m).
  int ex = 0;
  std::frexp(a, &ex);
  return std::ldexp(1.0, ex - 1 - f->mantissa_bits);
}

bool is_subnormal_in(DType t, double x) {
  const FloatFormat* f = float_format(t);
  if (f == nullptr || x == 0.0 || !std::isfinite(x)) return false;
  return std::fabs(x) < f->min_normal;
}

}  // namespace parity
