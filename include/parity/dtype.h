// parity/dtype.h — the element types parity reads, compares and emulates.
//
// Every float format is described by one `FloatFormat` record (bits, exponent bias, what it does with
// the all-ones exponent) and converted by one pair of functions, `decode` and `encode_rne`, so that
// fp16, bf16 and the fp8 formats share a single, exhaustively tested definition.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace parity {

enum class DType : uint8_t {
  kF64,
  kF32,
  kF16,
  kBF16,
  kF8E4M3,  // OCP fp8 e4m3fn: no infinities, NaN = S.1111.111, max 448
  kF8E5M2,  // OCP fp8 e5m2: IEEE-like, max 57344
  kI8,
  kI16,
  kI32,
  kI64,
  kU8,
  kBool,
};

inline constexpr int kNumDTypes = 12;

// Canonical lower-case names used in every output: "f64", "f32", "f16", "bf16", "f8_e4m3", "f8_e5m2",
// "i8", "i16", "i32", "i64", "u8", "bool".
const char* dtype_name(DType t);
// Accepts the canonical names and the usual aliases (float32, fp32, torch.float32, bfloat16, F32, BF16,
// F8_E4M3, float8_e4m3fn, int64, ...). Returns nullopt for anything else.
std::optional<DType> dtype_from_name(std::string_view name);
// Size of one element in bytes.
int dtype_size(DType t);
bool dtype_is_float(DType t);
bool dtype_is_integer(DType t);  // includes bool

// Description of a binary floating-point format: 1 sign bit, `exponent_bits`, `mantissa_bits` (stored,
// without the implicit leading one).
struct FloatFormat {
  DType dtype;
  int exponent_bits;
  int mantissa_bits;
  int exponent_bias;
  bool has_infinity;       // false for e4m3fn
  bool nan_is_all_ones;    // e4m3fn: only S.1111.111 is NaN; the rest of the top binade is finite
  double max_finite;       // largest finite value
  double min_normal;       // smallest positive normal, 2^(1-bias)
  double min_subnormal;    // smallest positive subnormal, 2^(1-bias-mantissa_bits)
  double unit_roundoff;    // u = 2^-(mantissa_bits+1): max relative error of round-to-nearest
  double epsilon;          // machine epsilon 2^-mantissa_bits: gap between 1 and the next value
};

// The format record of a float dtype; nullptr for integer dtypes.
const FloatFormat* float_format(DType t);

// Value of the element stored in `bits` (low `bits_of(t)` bits used) of a float dtype, exactly, as a
// double. Integer dtypes decode to their integer value.
double decode_bits(DType t, uint64_t bits);

// Round-to-nearest-even of `x` into float dtype `t`, returning the bit pattern. Overflow follows the
// format: IEEE-like formats saturate to +-inf when |x| rounds past max_finite (ties to even at the
// boundary, as IEEE 754 does); e4m3fn has no infinity and returns NaN (the "fn" convention used by
// PyTorch / ml_dtypes casts). NaN maps to the format's canonical quiet NaN.
uint64_t encode_rne(DType t, double x);

// x rounded to the nearest value representable in `t` (decode_bits(encode_rne(t, x))).
double round_to(DType t, double x);

// The unit in the last place of `t` at magnitude |x|: the gap between the two representable values that
// bracket |x| (for |x| exactly representable, the gap above it, using the binade of |x|). Subnormal range
// returns min_subnormal. NaN for non-finite x.
double ulp_at(DType t, double x);

// True when x is a nonzero value whose magnitude is below t's smallest normal.
bool is_subnormal_in(DType t, double x);

}  // namespace parity
