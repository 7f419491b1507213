// ReLU masks that flip (mask_flip.h).
#include "analysis/mask_flip.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "parity/tensor.h"

namespace parity::analysis_detail {

namespace {
constexpr int64_t kBlock = 4096;
}  // namespace

bool is_relu_input_gradient(const Record& r) {
  if (r.direction != "backward" || r.role != "output" || !dtype_is_float(r.dtype)) return false;
  const std::string& op = r.op.str();
  return op == "relu" || op == "relu_" || op == "ReLU";
}

std::string relu_input_name(const Record& r) {
  const std::string& name = r.name.str();
  const size_t at = name.rfind("/backward/");
  return at == std::string::npos ? "" : name.substr(0, at) + "/forward/input/0";
}

Result<MaskFlip> measure_mask_flip(const Record& golden_grad, const Record& target_grad, const Record& golden_input,
                                   const Record& target_input, const RecordSource& golden, const RecordSource& target,
                                   int target_scale_log2) {
  PARITY_ASSIGN_OR_RETURN(TensorView gg, golden.load(golden_grad));
  PARITY_ASSIGN_OR_RETURN(TensorView tg, target.load(target_grad));
  PARITY_ASSIGN_OR_RETURN(TensorView gx, golden.load(golden_input));
  PARITY_ASSIGN_OR_RETURN(TensorView tx, target.load(target_input));
  const int64_t n = gg.numel;
  if (tg.numel != n || gx.numel != n || tx.numel != n)
    return Status::Invalid("a ReLU's gradient and its input hold different element counts");
  const double unscale = std::ldexp(1.0, -target_scale_log2);
  std::vector<double> a(kBlock), b(kBlock), x(kBlock), y(kBlock);
  MaskFlip f;
  f.numel = n;
  double gnorm2 = 0, residual2 = 0;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t count = std::min(kBlock, n - begin);
    decode_to_double(gg, begin, count, a.data());
    decode_to_double(tg, begin, count, b.data());
    decode_to_double(gx, begin, count, x.data());
    decode_to_double(tx, begin, count, y.data());
    for (int64_t i = 0; i < count; ++i) {
      gnorm2 += a[i] * a[i];
      if ((x[i] > 0) != (y[i] > 0)) {
        ++f.flipped;
        continue;
      }
      const double d = b[i] * unscale - a[i];
      residual2 += d * d;
    }
  }
  if (!std::isfinite(gnorm2) || !std::isfinite(residual2) || !(gnorm2 > 0))
    return Status::Invalid("a ReLU's gradient is zero or not finite: no relative residual");
  f.residual = std::sqrt(residual2 / gnorm2);
  return f;
}

}  // namespace parity::analysis_detail
