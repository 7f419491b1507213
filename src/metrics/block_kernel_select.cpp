// Run-time choice of the block kernel variant, and the scalar index scan that goes with it.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "metrics/block_kernel.h"

namespace parity::metrics_detail {
namespace {

enum class Variant { kBaseline, kAvx2, kAvx512 };

// PARITY_METRICS_KERNEL=baseline|avx2|avx512vl caps the choice (tests and benchmarks of the slower
// variants); a variant the CPU lacks is never chosen.
Variant best_variant() {
  const char* cap = std::getenv("PARITY_METRICS_KERNEL");
  if (cap != nullptr && std::strcmp(cap, "baseline") == 0) return Variant::kBaseline;
  const bool allow_avx512 = cap == nullptr || std::strcmp(cap, "avx2") != 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (allow_avx512 && block_kernel_avx512() != nullptr && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma")) {
    return Variant::kAvx512;
  }
  if (block_kernel_avx2() != nullptr && __builtin_cpu_supports("avx2")) return Variant::kAvx2;
#endif
  return Variant::kBaseline;
}

}  // namespace

BlockFn select_block_kernel() {
  static const BlockFn fn = [] {
    switch (best_variant()) {
      case Variant::kAvx512: return block_kernel_avx512();
      case Variant::kAvx2: return block_kernel_avx2();
      case Variant::kBaseline: break;
    }
    return block_kernel_generic();
  }();
  return fn;
}

DecodeFn select_decoder() {
  static const DecodeFn fn = [] {
    switch (best_variant()) {
      case Variant::kAvx512: return decoder_avx512();
      case Variant::kAvx2: return decoder_avx2();
      case Variant::kBaseline: break;
    }
    return decoder_generic();
  }();
  return fn;
}

namespace {

// PARITY_METRICS_FAST=0: no fused or span kernel (tests of the general kernel).
bool fast_path_off() {
  static const bool off = [] {
    const char* v = std::getenv("PARITY_METRICS_FAST");
    return v != nullptr && std::strcmp(v, "0") == 0;
  }();
  return off;
}

}  // namespace

FastFn select_fast_kernel(DType g, DType t) {
  if (fast_path_off()) return nullptr;
  switch (best_variant()) {
    case Variant::kAvx512: return fast_kernel_avx512(g, t);
    case Variant::kAvx2: return fast_kernel_avx2(g, t);
    case Variant::kBaseline: break;
  }
  return fast_kernel_generic(g, t);
}

SpanFn select_span_kernel(DType g, DType t) {
  if (fast_path_off() || best_variant() != Variant::kAvx512) return nullptr;
  return span_kernel_avx512(g, t);
}

const char* block_kernel_name() {
  switch (best_variant()) {
    case Variant::kAvx512: return "avx512vl";
    case Variant::kAvx2: return "avx2";
    case Variant::kBaseline: break;
  }
  return "baseline";
}

// |t − g| (kind 0) or msprobe's relative error (kind 1) of one compared element, with the kernel's
// arithmetic.
static double element_error(double g, double t, const KernelParams& p, int kind) {
  const double ad = std::fabs(t - g);
  if (kind != 1) return ad;
  const double eps = p.rel_epsilon;
  return g == 0.0 ? std::fabs((t + eps) - eps) / eps : ad / std::fabs(g);
}

double max_of_block(const double* g, const double* t, int64_t n, const KernelParams& p, int kind) {
  double best = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(g[i]) || !std::isfinite(t[i])) continue;
    const double v = element_error(g[i], t[i], p, kind);
    if (v > best) best = v;
  }
  return best;
}

int64_t first_index_of_max(const double* g, const double* t, int64_t n, const KernelParams& p, int kind,
                           double value) {
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(g[i]) && std::isfinite(t[i]) && element_error(g[i], t[i], p, kind) == value) return i;
  return -1;
}

}  // namespace parity::metrics_detail
