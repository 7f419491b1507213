// Names, sizes and format records of parity's element types (include/parity/dtype.h).
//
// Format parameters: IEEE 754-2019 Table 3.5 (binary64, binary32, binary16); bfloat16 is binary32 with
// the low 16 mantissa bits dropped; the fp8 formats are the OCP "8-bit Floating Point Specification
// (OFP8)" rev 1.0, E4M3 in its "fn" variant (finite + NaN only, as PyTorch's float8_e4m3fn and
// ml_dtypes' float8_e4m3fn) and E5M2 (IEEE-like, with infinities).
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "parity/dtype.h"

namespace parity {
namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  int size;
};

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {DType::kF64, "f64", 8},
    {DType::kF32, "f32", 4},
    {DType::kF16, "f16", 2},
    {DType::kBF16, "bf16", 2},
    {DType::kF8E4M3, "f8_e4m3", 1},
    {DType::kF8E5M2, "f8_e5m2", 1},
    {DType::kI8, "i8", 1},
    {DType::kI16, "i16", 2},
    {DType::kI32, "i32", 4},
    {DType::kI64, "i64", 8},
    {DType::kU8, "u8", 1},
    {DType::kBool, "bool", 1},
}};

// Builds a record from the three defining parameters; the derived limits follow from them:
//   min_normal = 2^(1-bias), min_subnormal = 2^(1-bias-m), u = 2^-(m+1), eps = 2^-m,
//   max_finite = (2 - 2^-m) * 2^(emax-bias) with emax = 2^e - 2 (the all-ones exponent is inf/NaN),
// except e4m3fn, whose all-ones exponent is finite except S.1111.111, so its largest value is
// 1.110b * 2^(15-7) = 1.75 * 256 = 448.
FloatFormat make_format(DType t, int e, int m, bool has_inf, bool nan_all_ones) {
  FloatFormat f{};
  f.dtype = t;
  f.exponent_bits = e;
  f.mantissa_bits = m;
  f.exponent_bias = (1 << (e - 1)) - 1;
  f.has_infinity = has_inf;
  f.nan_is_all_ones = nan_all_ones;
  if (nan_all_ones) {
    const int emax = (1 << e) - 1;
    f.max_finite = std::ldexp(2.0 - std::ldexp(2.0, -m), emax - f.exponent_bias);  // mantissa 1..10
  } else {
    const int emax = (1 << e) - 2;
    f.max_finite = std::ldexp(2.0 - std::ldexp(1.0, -m), emax - f.exponent_bias);
  }
  f.min_normal = std::ldexp(1.0, 1 - f.exponent_bias);
  f.min_subnormal = std::ldexp(1.0, 1 - f.exponent_bias - m);
  f.unit_roundoff = std::ldexp(1.0, -(m + 1));
  f.epsilon = std::ldexp(1.0, -m);
  return f;
}

const std::array<FloatFormat, 6>& formats() {
  static const std::array<FloatFormat, 6> kFormats = {
      make_format(DType::kF64, 11, 52, true, false),
      make_format(DType::kF32, 8, 23, true, false),
      make_format(DType::kF16, 5, 10, true, false),
      make_format(DType::kBF16, 8, 7, true, false),
      make_format(DType::kF8E4M3, 4, 3, false, true),
      make_format(DType::kF8E5M2, 5, 2, true, false),
  };
  return kFormats;
}

std::string normalise(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (out.rfind("torch.", 0) == 0) out.erase(0, 6);
  if (out.rfind("np.", 0) == 0) out.erase(0, 3);
  if (out.rfind("numpy.", 0) == 0) out.erase(0, 6);
  return out;
}

}  // namespace

const char* dtype_name(DType t) { return kInfo[static_cast<int>(t)].name; }

int dtype_size(DType t) { return kInfo[static_cast<int>(t)].size; }

bool dtype_is_float(DType t) {
  switch (t) {
    case DType::kF64:
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kF8E4M3:
    case DType::kF8E5M2:
      return true;
    default:
      return false;
  }
}

bool dtype_is_integer(DType t) { return !dtype_is_float(t); }

std::optional<DType> dtype_from_name(std::string_view name) {
  // Aliases seen in the wild: parity's own names, numpy's (float32, int64), torch's (torch.float32,
  // torch.half, torch.float8_e4m3fn), safetensors' (F32, BF16, F8_E4M3), msprobe's (same as torch's
  // with "torch." prefix) and the common fp32/fp16 shorthands. numpy's short type codes ("f8" is
  // float64, not fp8) are deliberately absent: they are ambiguous and only the .npy reader parses them.
  static const std::array<std::pair<const char*, DType>, 40> kAliases = {{
      {"f64", DType::kF64},         {"float64", DType::kF64},      {"fp64", DType::kF64},
      {"double", DType::kF64},      {"f32", DType::kF32},          {"float32", DType::kF32},
      {"fp32", DType::kF32},        {"float", DType::kF32},        {"f16", DType::kF16},
      {"float16", DType::kF16},     {"fp16", DType::kF16},         {"half", DType::kF16},
      {"bf16", DType::kBF16},       {"bfloat16", DType::kBF16},    {"f8_e4m3", DType::kF8E4M3},
      {"f8_e4m3fn", DType::kF8E4M3}, {"float8_e4m3fn", DType::kF8E4M3}, {"float8_e4m3", DType::kF8E4M3},
      {"fp8_e4m3", DType::kF8E4M3}, {"e4m3", DType::kF8E4M3},     {"f8_e5m2", DType::kF8E5M2},
      {"float8_e5m2", DType::kF8E5M2}, {"fp8_e5m2", DType::kF8E5M2}, {"e5m2", DType::kF8E5M2},
      {"i8", DType::kI8},           {"int8", DType::kI8},          {"i16", DType::kI16},
      {"int16", DType::kI16},       {"short", DType::kI16},        {"i32", DType::kI32},
      {"int32", DType::kI32},       {"int", DType::kI32},          {"i64", DType::kI64},
      {"int64", DType::kI64},       {"long", DType::kI64},         {"u8", DType::kU8},
      {"uint8", DType::kU8},        {"bool", DType::kBool},        {"bool_", DType::kBool},
      {"boolean", DType::kBool},
  }};
  const std::string n = normalise(name);
  for (const auto& [alias, t] : kAliases) {
    if (n == alias) return t;
  }
  return std::nullopt;
}

const FloatFormat* float_format(DType t) {
  for (const FloatFormat& f : formats()) {
    if (f.dtype == t) return &f;
  }
  return nullptr;
}

}  // namespace parity
