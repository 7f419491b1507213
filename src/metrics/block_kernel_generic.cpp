// The block kernel compiled for the x86-64 baseline (SSE2) or whatever the build targets: the
// fallback on CPUs without AVX2 and on other architectures. Same arithmetic as the AVX2 variant.
#define PARITY_BLOCK_NS generic
#include "metrics/block_kernel_impl.h"

namespace parity::metrics_detail {
BlockFn block_kernel_generic() { return &generic::block_entry; }
DecodeFn decoder_generic() { return &generic::decode_entry; }
FastFn fast_kernel_generic(DType g, DType t) { return generic::fast_entry(g, t); }
}  // namespace parity::metrics_detail
