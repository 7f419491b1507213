// The block kernel compiled for AVX2 (selected at run time when the CPU has it). Only "avx2" is
// enabled, not "fma": contracting a*b+c would change rounding and make results depend on the CPU.
#include "metrics/block_kernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cmath>
#include <cstdint>
#include <cstring>
// clang ignores GCC's target pragma: it takes the same target as an attribute on every function here
// (the intrinsics of the fused path need it; fuzz/ builds with clang).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
#define PARITY_BLOCK_NS avx2
#define PARITY_BLOCK_AVX 1
#include "metrics/block_kernel_impl.h"
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace parity::metrics_detail {
BlockFn block_kernel_avx2() { return &avx2::block_entry; }
DecodeFn decoder_avx2() { return &avx2::decode_entry; }
FastFn fast_kernel_avx2(DType g, DType t) { return avx2::fast_entry(g, t); }
}  // namespace parity::metrics_detail
#else
namespace parity::metrics_detail {
BlockFn block_kernel_avx2() { return nullptr; }
DecodeFn decoder_avx2() { return nullptr; }
FastFn fast_kernel_avx2(DType, DType) { return nullptr; }
}  // namespace parity::metrics_detail
#endif
