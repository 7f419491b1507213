// Run-time choice of the block kernel variant.
#include "metrics/block_kernel.h"

namespace parity::metrics_detail {

static bool cpu_has_avx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

BlockFn select_block_kernel() {
  static const BlockFn fn = [] {
    BlockFn avx2 = block_kernel_avx2();
    return (avx2 != nullptr && cpu_has_avx2()) ? avx2 : block_kernel_generic();
  }();
  return fn;
}

const char* block_kernel_name() {
  return (block_kernel_avx2() != nullptr && cpu_has_avx2()) ? "avx2" : "baseline";
}

}  // namespace parity::metrics_detail
