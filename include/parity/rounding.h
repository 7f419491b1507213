// parity/rounding.h — precision emulation kernels: round float32 arrays, in place, to a narrower format.
//
// These are the array forms of encode_rne()/decode_bits() (parity/dtype.h): for every float32 input x,
// round_f32_inplace(t, ...) stores exactly decode_bits(t, encode_rne(t, x)) (tests/numeric checks this
// pattern by pattern), but works on the float32 bits directly so that one loop over a buffer vectorises.
// They are what parity.emulate (docs/emulation.md) and replay call through the Python extension.
#pragma once

#include <cstdint>

#include "parity/dtype.h"
#include "parity/status.h"

namespace parity {

// What happens to a value whose magnitude rounds past the format's largest finite value.
enum class Overflow : uint8_t {
  kFormat,    // the format's own rule, as encode_rne: +-inf (f16, bf16, e5m2); NaN for e4m3fn
  kSaturate,  // clamp to +-max_finite; +-inf inputs too (NaN stays NaN): the "satfinite" conversions
};

struct RoundOptions {
  Overflow overflow = Overflow::kFormat;
  // Flush results below the format's smallest normal to (signed) zero, as hardware running with FTZ
  // does; without it subnormals of the format are kept (gradual underflow).
  bool flush_subnormals = false;
};

// Round each of the n float32 values at `data` to float format `t` (kF16, kBF16, kF8E4M3, kF8E5M2 or kF32,
// which is the identity except for flush_subnormals), round-to-nearest-even, and store the result (a value
// of `t`, widened exactly to float32) in place. NaN stays NaN. Fails only for a non-float `t`.
Status round_f32_inplace(DType t, float* data, int64_t n, RoundOptions options = {});

// Round each float32 value to `mantissa_bits` (1..23) stored fraction bits, keeping float32's exponent range
// (round-to-nearest-even; a carry moves into the exponent, past FLT_MAX gives inf): mantissa_bits = 10 is
// TF32, the format tensor cores read float32 matmul operands in; 7 is bf16.
Status round_f32_mantissa_inplace(float* data, int64_t n, int mantissa_bits);

// Replace every float32 subnormal (0 < |x| < 2^-126) by zero of the same sign (flush-to-zero).
void flush_subnormals_f32_inplace(float* data, int64_t n);

// max |x| over the finite values (NaN and inf are skipped, as amax histories of fp8 recipes do); 0 when
// there is none.
float finite_absmax_f32(const float* data, int64_t n);

// Symmetric int8 fake quantisation with a given scale > 0: x -> clamp(rne(x / scale), -127, 127) * scale
// (the zero point is 0; -128 is unused so the range is symmetric). NaN stays NaN; +-inf clamp to +-127.
Status fake_quant_int8_inplace(float* data, int64_t n, float scale);

// Per-channel form: `data` is a C-order array seen as [outer, channels, inner]; channel c uses scales[c].
Status fake_quant_int8_channels_inplace(float* data, int64_t outer, int64_t channels, int64_t inner,
                                        const float* scales);

// Per-channel finite absmax of a C-order [outer, channels, inner] array into out[channels].
void finite_absmax_channels_f32(const float* data, int64_t outer, int64_t channels, int64_t inner, float* out);

}  // namespace parity
