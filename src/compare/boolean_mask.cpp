#include "compare/boolean_mask.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace parity::compare {
namespace {

constexpr int64_t kChunk = 1 << 16;
// The mildest constant additive masks use (BERT-era `(1 - mask) * -10000.0`); anything closer to 0 could
// be data.
constexpr double kMaskConstantAtMost = -1e4;

// The constant c of an additive mask (only 0 and c, c ≤ −10000 or −inf), found by one pass; nullopt when
// the tensor holds anything else.
std::optional<double> additive_mask_constant(const TensorView& t) {
  std::vector<double> buf(static_cast<size_t>(std::min<int64_t>(kChunk, t.numel)));
  std::optional<double> c;
  for (int64_t begin = 0; begin < t.numel; begin += kChunk) {
    const int64_t n = std::min(kChunk, t.numel - begin);
    decode_to_double(t, begin, n, buf.data());
    for (int64_t i = 0; i < n; ++i) {
      const double v = buf[i];
      if (v == 0) continue;
      if (!(v <= kMaskConstantAtMost)) return std::nullopt;  // NaN too
      if (c && *c != v) return std::nullopt;
      c = v;
    }
  }
  return c;  // nullopt when all zero: nothing masked, nothing to read
}

}  // namespace

std::optional<BooleanMaskReading> read_boolean_mask(const TensorView& golden, const TensorView& target) {
  const bool golden_bool = golden.dtype == DType::kBool, target_bool = target.dtype == DType::kBool;
  if (golden_bool == target_bool || golden.numel != target.numel || golden.numel == 0) return std::nullopt;
  const TensorView& boolean = golden_bool ? golden : target;
  const TensorView& additive = golden_bool ? target : golden;
  if (!dtype_is_float(additive.dtype)) return std::nullopt;
  const std::optional<double> c = additive_mask_constant(additive);
  if (!c) return std::nullopt;

  // Which convention agrees at more positions: True where the additive mask is 0 (attends), or where it is c.
  const int64_t n = boolean.numel;
  std::vector<double> b(static_cast<size_t>(std::min(kChunk, n))), a(b.size());
  int64_t agree_true_attends = 0;
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t m = std::min(kChunk, n - begin);
    decode_to_double(boolean, begin, m, b.data());
    decode_to_double(additive, begin, m, a.data());
    for (int64_t i = 0; i < m; ++i) agree_true_attends += (b[i] != 0) == (a[i] == 0);
  }
  BooleanMaskReading r;
  r.golden_is_boolean = golden_bool;
  r.true_attends = 2 * agree_true_attends >= n;
  r.masked_value = *c;

  auto values = std::make_shared<std::vector<float>>(static_cast<size_t>(n));
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t m = std::min(kChunk, n - begin);
    decode_to_double(boolean, begin, m, b.data());
    for (int64_t i = 0; i < m; ++i)
      (*values)[begin + i] = ((b[i] != 0) == r.true_attends) ? 0.0f : -std::numeric_limits<float>::infinity();
  }
  r.additive.dtype = DType::kF32;
  r.additive.shape = boolean.shape;
  r.additive.numel = n;
  r.additive.data = reinterpret_cast<const std::byte*>(values->data());
  r.additive.owner = values;
  r.note = fmt::format("{} boolean mask (True = {}) read as the additive mask it stands for, the {}'s {:.4g} as −inf; ",
                       golden_bool ? "golden" : "target", r.true_attends ? "attend" : "masked",
                       golden_bool ? "target" : "golden", *c);
  return r;
}

}  // namespace parity::compare
