// compare_updates (include/parity/metrics.h): the relative difference of two runs' changes of one tensor
// between two steps. Blocks of kBlock elements are decoded to fp64 and summed per block, block sums
// added in order: the result does not depend on threads (there are none) and the error of each sum is
// ≤ (kBlock + n/kBlock)·2^-53 relative, far below any threshold applied to it.
#include <cmath>
#include <limits>
#include <vector>

#include "parity/dtype.h"
#include "parity/metrics.h"

namespace parity {

namespace {
constexpr int64_t kBlock = 4096;
}  // namespace

Result<UpdateMetrics> compare_updates(const TensorView& golden_before, const TensorView& golden_after,
                                      const TensorView& target_before, const TensorView& target_after) {
  const int64_t n = golden_after.numel;
  if (golden_before.numel != n || target_before.numel != n || target_after.numel != n)
    return Status::Invalid("update: the tensors of the two steps hold different element counts");
  std::vector<double> gb(kBlock), ga(kBlock), tb(kBlock), ta(kBlock);
  double sum_gg = 0, sum_dd = 0;
  bool finite = true;
  UpdateMetrics m;
  const bool target_float = dtype_is_float(target_before.dtype);
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t count = std::min(kBlock, n - begin);
    decode_to_double(golden_before, begin, count, gb.data());
    decode_to_double(golden_after, begin, count, ga.data());
    decode_to_double(target_before, begin, count, tb.data());
    decode_to_double(target_after, begin, count, ta.data());
    double block_gg = 0, block_dd = 0;
    for (int64_t i = 0; i < count; ++i) {
      const double ug = ga[i] - gb[i];  // the golden's update
      const double d = (ta[i] - tb[i]) - ug;  // minus the target's
      block_gg += ug * ug;
      block_dd += d * d;
      if (ug == 0) continue;
      ++m.moved;
      if (ta[i] != tb[i]) continue;
      ++m.stalled;
      if (target_float && round_to(target_before.dtype, tb[i] + ug) == tb[i]) ++m.lost;
    }
    finite = finite && std::isfinite(block_gg) && std::isfinite(block_dd);
    sum_gg += block_gg;
    sum_dd += block_dd;
  }
  if (!finite) return m;
  m.golden_norm = std::sqrt(sum_gg);
  m.diff_norm = std::sqrt(sum_dd);
  m.rel_error = m.golden_norm > 0 ? m.diff_norm / m.golden_norm : (m.diff_norm > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  return m;
}

}  // namespace parity
