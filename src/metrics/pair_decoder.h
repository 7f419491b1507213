// PairDecoder: both sides of a compared range widened into fp64 block buffers (compare_tensors' general
// kernel and the scans of locate_maxima).
#pragma once

#include <cstdint>
#include <limits>

#include "metrics/block_kernel.h"
#include "parity/tensor.h"

namespace parity::metrics_detail {

// Decodes a range of both sides into fp64 block buffers: contiguous native-order data of a fast-path
// dtype by the kernel variant's own decoder, anything else by decode_to_double. A target scale 2^e ≠ 1
// (MetricOptions::target_scale_log2) multiplies the target's block after decoding: a power of two, so
// exact in fp64 for every stored dtype.
class PairDecoder {
 public:
  PairDecoder(const TensorView& golden, const TensorView& target, double target_scale = 1.0,
              bool extremes_as_infinities = false, double golden_infinity_from = 0.0,
              double target_infinity_from = 0.0)
      : golden_(golden), target_(target), fast_(select_decoder()),
        g_direct_(direct(golden)), t_direct_(direct(target)), target_scale_(target_scale),
        g_extreme_(extremes_as_infinities ? (golden_infinity_from > 0 ? golden_infinity_from : extreme_of(golden)) : 0.0),
        t_extreme_(extremes_as_infinities ? (target_infinity_from > 0 ? target_infinity_from : extreme_of(target)) : 0.0) {}

  bool both_direct() const { return g_direct_ && t_direct_; }

  // n ≤ kBlock elements from flat index b into gb, tb, padded with NaN (neutral) to a multiple of 4.
  void decode(int64_t b, int64_t n, double* gb, double* tb) const {
    side(golden_, g_direct_, b, n, gb);
    side(target_, t_direct_, b, n, tb);
    if (g_extreme_ > 0) extremes_to_infinities(gb, n, g_extreme_);
    if (t_extreme_ > 0) extremes_to_infinities(tb, n, t_extreme_);
    if (target_scale_ != 1.0)
      for (int64_t i = 0; i < n; ++i) tb[i] *= target_scale_;
    for (int64_t i = n; i < ((n + 3) & ~int64_t{3}); ++i) gb[i] = tb[i] = std::numeric_limits<double>::quiet_NaN();
  }

 private:
  static bool direct(const TensorView& v) { return !v.byteswapped && v.is_c_contiguous(); }
  // The largest finite magnitude of a float dtype (MetricOptions::extremes_as_infinities); 0 for integers.
  static double extreme_of(const TensorView& v) {
    const FloatFormat* f = float_format(v.dtype);
    return f != nullptr ? f->max_finite : 0.0;
  }
  static void extremes_to_infinities(double* x, int64_t n, double extreme) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i)
      if (x[i] >= extreme || x[i] <= -extreme) x[i] = x[i] > 0 ? kInf : -kInf;
  }
  void side(const TensorView& v, bool is_direct, int64_t b, int64_t n, double* out) const {
    if (!is_direct || !fast_(v.dtype, v.data + b * dtype_size(v.dtype), n, out)) decode_to_double(v, b, n, out);
  }

  const TensorView& golden_;
  const TensorView& target_;
  DecodeFn fast_;
  bool g_direct_, t_direct_;
  double target_scale_;
  double g_extreme_, t_extreme_;  // > 0: read ±this as ±inf on that side
};

}  // namespace parity::metrics_detail
