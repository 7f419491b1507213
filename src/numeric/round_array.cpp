// Precision-emulation kernels over float32 arrays (include/parity/rounding.h).
//
// Rounding works on the float32 bit pattern, one branch-free expression per element so that GCC -O3
// vectorises the loops:
//  * in the target's normal range, round-to-nearest-even of the low `23 - m` fraction bits is the integer
//    step  b + (2^(s-1) - 1) + ((b >> s) & 1)  followed by clearing those bits (s = 23 - m). A carry out of
//    the fraction increments the exponent field, which is exactly the next binade (or inf past FLT_MAX);
//  * below the target's smallest normal 2^emin the spacing is the fixed quantum q = 2^(emin - m). Adding
//    M = 2^(emin - m + 23) makes float32's own round-to-nearest-even round |x| (< 2^emin <= M) to a multiple
//    of q (the sum lies in [M, 2M), whose ulp is q); subtracting M again is exact (Sterbenz);
//  * a rounded magnitude above max_finite is the format's overflow (inf, NaN for e4m3fn) or, saturating,
//    max_finite. encode_rne() (float_convert.cpp) decides the same cases one double at a time; the tests
//    compare the two element by element.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "parity/rounding.h"

namespace parity {
namespace {

constexpr uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr uint32_t kSignMask = 0x80000000u;
constexpr uint32_t kInfBits = 0x7F800000u;
constexpr uint32_t kQuietNaN = 0x7FC00000u;

inline uint32_t bits_of(float x) { return std::bit_cast<uint32_t>(x); }
inline float float_of(uint32_t b) { return std::bit_cast<float>(b); }

// Round-to-nearest-even of a non-negative float32 pattern to `shift` fewer fraction bits (shift in 1..23).
inline uint32_t rne_drop_bits(uint32_t a, int shift) {
  const uint32_t half_minus_one = (uint32_t{1} << (shift - 1)) - 1;
  const uint32_t r = a + half_minus_one + ((a >> shift) & 1u);
  return r & ~((uint32_t{1} << shift) - 1);
}

// The per-format constants of the loop, derived from the FloatFormat record once per call.
struct Plan {
  int shift;               // 23 - mantissa_bits
  uint32_t min_normal;     // float32 bits of 2^emin
  float magic;             // 2^(emin - m + 23), see the file comment
  uint32_t max_finite;     // float32 bits of the largest finite value
  uint32_t overflow;       // bits a too-large magnitude becomes (without sign)
};

Plan make_plan(const FloatFormat& f, RoundOptions o) {
  Plan p{};
  const int m = f.mantissa_bits;
  const int emin = 1 - f.exponent_bias;
  p.shift = 23 - m;
  p.min_normal = bits_of(static_cast<float>(f.min_normal));
  p.magic = std::ldexp(1.0f, emin - m + 23);
  p.max_finite = bits_of(static_cast<float>(f.max_finite));
  if (o.overflow == Overflow::kSaturate) {
    p.overflow = p.max_finite;
  } else {
    p.overflow = f.has_infinity ? kInfBits : kQuietNaN;
  }
  return p;
}

inline uint32_t round_one(uint32_t b, const Plan& p, bool ftz) {
  const uint32_t sign = b & kSignMask;
  const uint32_t a = b & kAbsMask;
  const uint32_t normal = rne_drop_bits(a, p.shift);
  const uint32_t sub = bits_of((float_of(a) + p.magic) - p.magic);
  uint32_t r = a < p.min_normal ? sub : normal;
  if (ftz) r = r < p.min_normal ? 0u : r;
  r = r > p.max_finite ? p.overflow : r;
  // NaN inputs stay NaN (their payload is not the format's business); checked last so no step above can
  // turn a NaN into inf by clearing its payload bits.
  return a > kInfBits ? b : (sign | r);
}

}  // namespace

Status round_f32_inplace(DType t, float* data, int64_t n, RoundOptions options) {
  if (t == DType::kF32) {
    if (options.flush_subnormals) flush_subnormals_f32_inplace(data, n);
    return Status::OK();
  }
  const FloatFormat* f = float_format(t);
  if (f == nullptr || t == DType::kF64) {
    return Status::Invalid(std::string("round_f32_inplace: ") + dtype_name(t) +
                                   " is not a float format narrower than f32");
  }
  const Plan p = make_plan(*f, options);
  const bool ftz = options.flush_subnormals;
  uint32_t* u = reinterpret_cast<uint32_t*>(data);
  if (ftz) {
    for (int64_t i = 0; i < n; ++i) u[i] = round_one(u[i], p, true);
  } else {
    for (int64_t i = 0; i < n; ++i) u[i] = round_one(u[i], p, false);
  }
  return Status::OK();
}

Status round_f32_mantissa_inplace(float* data, int64_t n, int mantissa_bits) {
  if (mantissa_bits < 1 || mantissa_bits > 23) {
    return Status::Invalid("round_f32_mantissa_inplace: mantissa_bits " + std::to_string(mantissa_bits) +
                                   " is outside 1..23");
  }
  if (mantissa_bits == 23) return Status::OK();
  const int shift = 23 - mantissa_bits;
  uint32_t* u = reinterpret_cast<uint32_t*>(data);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t b = u[i];
    const uint32_t a = b & kAbsMask;
    // Same exponent range as float32, so the bit step is right for subnormals too, and a carry past FLT_MAX
    // lands on the inf pattern by itself.
    const uint32_t r = (b & kSignMask) | rne_drop_bits(a, shift);
    u[i] = a > kInfBits ? b : r;
  }
  return Status::OK();
}

void flush_subnormals_f32_inplace(float* data, int64_t n) {
  uint32_t* u = reinterpret_cast<uint32_t*>(data);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t b = u[i];
    // Exponent field 0 is zero or subnormal: keep the sign, drop the rest.
    u[i] = (b & kInfBits) == 0 ? (b & kSignMask) : b;
  }
}

float finite_absmax_f32(const float* data, int64_t n) {
  uint32_t m = 0;
  const uint32_t* u = reinterpret_cast<const uint32_t*>(data);
  // Magnitude order of non-negative floats is the integer order of their bits.
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t a = u[i] & kAbsMask;
    m = std::max(m, a < kInfBits ? a : 0u);
  }
  return float_of(m);
}

namespace {

// rne(v) for |v| <= 2^22 by float32's own rounding of v + 1.5 * 2^23 (the sum's ulp is 1); the clamp to
// +-127 comes first, so the bound always holds. This is std::nearbyint in the default rounding mode, as
// torch's fake_quantize kernels use, written so that the loop vectorises.
inline float quant_one(float x, float inv_scale, float scale) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  float v = x * inv_scale;
  v = std::min(std::max(v, -127.0f), 127.0f);
  const float q = (v + kRound) - kRound;
  return x != x ? x : q * scale;
}

}  // namespace

Status fake_quant_int8_inplace(float* data, int64_t n, float scale) {
  if (!(scale > 0.0f) || !std::isfinite(scale)) {
    return Status::Invalid("fake_quant_int8_inplace: scale " + std::to_string(scale) +
                                   " is not a positive finite number");
  }
  // x * (1/scale), not x / scale: the same arithmetic as torch.fake_quantize_per_tensor_affine, so that it
  // is an independent reference for this kernel bit for bit.
  const float inv = 1.0f / scale;
  for (int64_t i = 0; i < n; ++i) data[i] = quant_one(data[i], inv, scale);
  return Status::OK();
}

Status fake_quant_int8_channels_inplace(float* data, int64_t outer, int64_t channels, int64_t inner,
                                        const float* scales) {
  for (int64_t c = 0; c < channels; ++c) {
    if (!(scales[c] > 0.0f) || !std::isfinite(scales[c])) {
      return Status::Invalid("fake_quant_int8_channels_inplace: scale of channel " + std::to_string(c) +
                                     " is " + std::to_string(scales[c]) + ", not a positive finite number");
    }
  }
  if (inner == 1) {  // channels last (activations [..., C]): one vectorisable pass per row of C
    for (int64_t o = 0; o < outer; ++o) {
      float* row = data + o * channels;
      for (int64_t c = 0; c < channels; ++c) row[c] = quant_one(row[c], 1.0f / scales[c], scales[c]);
    }
    return Status::OK();
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      float* row = data + (o * channels + c) * inner;
      const float scale = scales[c];
      const float inv = 1.0f / scale;
      for (int64_t i = 0; i < inner; ++i) row[i] = quant_one(row[i], inv, scale);
    }
  }
  return Status::OK();
}

void finite_absmax_channels_f32(const float* data, int64_t outer, int64_t channels, int64_t inner, float* out) {
  for (int64_t c = 0; c < channels; ++c) out[c] = 0.0f;
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) {
      const float* row = data + o * channels;
      for (int64_t c = 0; c < channels; ++c) {
        const float a = std::fabs(row[c]);
        out[c] = a < INFINITY ? std::max(out[c], a) : out[c];  // NaN and inf compare false / equal: skipped
      }
    }
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      out[c] = std::max(out[c], finite_absmax_f32(data + (o * channels + c) * inner, inner));
    }
  }
}

}  // namespace parity
