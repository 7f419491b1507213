// The inner kernel of compare_tensors: every metric of one block of (at most kBlock) decoded fp64
// golden/target values, in a few passes over data that stays in L1.
//
// The body is written once (block_kernel_impl.h) with GCC vector extensions of a fixed width of four
// doubles and compiled twice: for AVX2 and for the x86-64 baseline (SSE2). A fixed width keeps the
// order of every sum the same on both, so results are bit-identical whichever runs; no FMA is
// allowed (it would change rounding relative to the numpy fp64 reference, see docs/metrics.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "parity/dtype.h"

#include "metrics/partial.h"

namespace parity::metrics_detail {

// How the ULP of the golden value in the target's dtype is applied (ulp_at in src/numeric):
// kPow2:   float target whose 1/ulp is always a normal double (every format but fp64): multiply |d|
//          by 2^(m − e), built from the exponent bits of |g| (exact, so equal to the division).
// kDivide: fp64 target, whose 1/ulp can overflow (2^1074): divide by the ulp.
// kOne:    integer target: adjacent values are 1 apart.
enum class UlpMode : int { kPow2, kDivide, kOne };

struct KernelParams {
  double rel_epsilon = 0;     // msprobe's epsilon where the golden is 0
  double min_normal_t = 0;    // smallest normal of the target dtype (0: integer target, no subnormals)
  double ftz_tiny = 0;        // FTZ signature bound on |g| (0: no FTZ counting)
  UlpMode ulp_mode = UlpMode::kOne;
  uint64_t ulp_pow2_base = 0; // kPow2: (2046 + mantissa_bits) << 52 (mod 2^64), see block_kernel_impl.h
  double ulp_sub = 0;         // kPow2: 1/min_subnormal; kDivide: min_subnormal (ulp below min_normal)
  double ulp_mant_scale = 0;  // kDivide: 2^-mantissa_bits
};

// g and t hold `n` values (n ≤ kBlock) and are readable up to the next multiple of 4, the padding
// being NaN on both sides. Overwrites `out`; its maxima come without indices (-1), see
// first_index_of_max.
using BlockFn = void (*)(const double* g, const double* t, int64_t n, const KernelParams& params, Partial& out);

// Decodes n contiguous native-order elements of dtype dt at p into fp64; false (nothing written) for
// dtypes without a fast path (the caller then uses decode_to_double).
using DecodeFn = bool (*)(DType dt, const std::byte* p, int64_t n, double* out);

// The first i in [0, n) with both sides finite whose |t − g| (kind 0) or msprobe relative error
// (kind 1) equals `value` (same arithmetic as the kernel), or -1.
// The fused fast path (block_kernel_impl.h, fast_impl): reads n (a multiple of 8) contiguous
// native-order elements of each side straight from the input, and either writes the block's Partial —
// that of decoding into fp64 and running the BlockFn, see below — and returns true, or returns false
// (some value non-finite, zero or subnormal in the target dtype: run the general kernel instead).
// `compensate` and `two_pass` are speed hints carried from block to block (start a chunk with false):
// true makes it take TwoSum side sums / the two-pass std at once; each is set when a block needed it.
// Every field is the general kernel's bit for bit except the sides' m2, which the one-pass form takes
// from Σx² within a bound of 4.7e-13 relative (docs/metrics.md); the two-pass form is bit-identical.
using FastFn = bool (*)(const std::byte* g, const std::byte* t, int64_t n, const KernelParams& params, Partial& out,
                        bool& compensate, bool& two_pass);

// A longer stretch for the kernels whose cost per call is worth spreading: n (a multiple of kBlock, at
// most kSpanBlocks·kBlock) contiguous native-order pairs measured into one Partial, or false (nothing
// usable in out): the caller then measures the stretch block by block. Only bf16 × bf16 on AVX-512
// (bf16_pass_fp32_sums: its bounds hold for any n, its sums being fp32 lanes of 256 pairs with fp64
// totals); a kernel whose exactness depends on the block length (the fp64 fused ones) has none.
inline constexpr int64_t kSpanBlocks = 4;
using SpanFn = bool (*)(const std::byte* g, const std::byte* t, int64_t n, const KernelParams& params, Partial& out);

int64_t first_index_of_max(const double* g, const double* t, int64_t n, const KernelParams& params, int kind,
                           double value);
// The largest |t − g| (kind 0) or msprobe relative error (kind 1) over the compared elements of
// g[0..n), t[0..n), in the kernel's fp64 arithmetic; -1 when none is compared.
double max_of_block(const double* g, const double* t, int64_t n, const KernelParams& params, int kind);

BlockFn block_kernel_generic();
BlockFn block_kernel_avx2();     // nullptr when the compiler cannot build it
BlockFn block_kernel_avx512();   // AVX2 code with AVX-512VL's 32 registers and mask registers
// The fastest variant this CPU runs (checked once with __builtin_cpu_supports), and its decoder.
BlockFn select_block_kernel();
DecodeFn select_decoder();
DecodeFn decoder_generic();
DecodeFn decoder_avx2();
DecodeFn decoder_avx512();
// The fused kernel of this CPU's variant for a (golden, target) dtype pair; nullptr when there is none
// (dtypes other than fp32 / bf16) or when PARITY_METRICS_FAST=0 turns the fast path off (tests).
FastFn select_fast_kernel(DType g, DType t);
FastFn fast_kernel_generic(DType g, DType t);
FastFn fast_kernel_avx2(DType g, DType t);
FastFn fast_kernel_avx512(DType g, DType t);
// The span kernel of this CPU's variant for a dtype pair; nullptr where there is none or when
// PARITY_METRICS_FAST=0 turns the fast path off.
SpanFn select_span_kernel(DType g, DType t);
SpanFn span_kernel_avx512(DType g, DType t);
// "avx512vl", "avx2" or "baseline": which variant select_block_kernel() picks (for benchmarks and tests).
const char* block_kernel_name();

}  // namespace parity::metrics_detail
