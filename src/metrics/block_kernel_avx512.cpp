// The block kernel's 4-lane code compiled with AVX-512VL: the same operations on the same 256-bit
// vectors, so results are bit-identical to the other variants, but with 32 vector registers (the
// kernel keeps ~25 accumulators live) and compares into mask registers. FMA comes with AVX-512F;
// block_kernel_impl.h turns contraction off and uses FMA only where the product is exact
// (add_exact_product), which rounds exactly like a multiply and an add.
#include "metrics/block_kernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cmath>
#include <cstdint>
#include <cstring>
// clang ignores GCC's target pragma: it takes the same target as an attribute on every function here
// (the intrinsics of the fused path need it; fuzz/ builds with clang).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,avx512f,avx512vl,avx512dq"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512vl,avx512dq")
// GCC 12's _mm512_cvtps_pd leaves an undefined vector as the pass-through operand of a masked
// conversion with a full mask, and warns about it.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define PARITY_BLOCK_NS avx512
#define PARITY_BLOCK_AVX 1
#define PARITY_BLOCK_AVX512 1
#define PARITY_BLOCK_FMA 1  // only for exact products (add_exact_product): same bits as multiply-add
#include "metrics/block_kernel_impl.h"
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace parity::metrics_detail {
BlockFn block_kernel_avx512() { return &avx512::block_entry; }
DecodeFn decoder_avx512() { return &avx512::decode_entry; }
FastFn fast_kernel_avx512(DType g, DType t) { return avx512::fast_entry(g, t); }
SpanFn span_kernel_avx512(DType g, DType t) { return avx512::span_entry(g, t); }
}  // namespace parity::metrics_detail
#else
namespace parity::metrics_detail {
BlockFn block_kernel_avx512() { return nullptr; }
DecodeFn decoder_avx512() { return nullptr; }
FastFn fast_kernel_avx512(DType, DType) { return nullptr; }
SpanFn span_kernel_avx512(DType, DType) { return nullptr; }
}  // namespace parity::metrics_detail
#endif
