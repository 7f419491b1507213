// fused_stats: the capture statistics of one tensor in a single pass (docs/capture.md, "Statistics").
//
// Definitions are those of parity::compute_stats (src/numeric/tensor.cpp) so stored and recomputed
// statistics agree: NaN and ±Inf are counted and excluded from min, max, absmax, mean and L2 norm;
// mean = Σ finite / #finite; zero_count counts ±0; subnormal_count counts nonzero values whose exponent
// field is all zeros in the tensor's own dtype (so a bf16 tensor is judged by bf16's range, not fp32's).
// Capture differs from compute_stats in speed only: it reads native contiguous buffers directly,
// classifies by bit pattern, and splits the work into fixed 64 Ki-element chunks (OpenMP) whose partial
// sums are added in chunk order — the result is independent of the thread count.
#include <algorithm>
#include <cstdlib>

#include <omp.h>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "parity/dump.h"

namespace parity::dump {
namespace {

constexpr int64_t kChunk = 1 << 16;

struct Partial {
  double sum = 0, sq = 0;
  double mn = std::numeric_limits<double>::infinity();
  double mx = -std::numeric_limits<double>::infinity();
  double amax = 0;
  int64_t nan = 0, inf = 0, zero = 0, sub = 0, finite = 0;
};

// Classification of one element: 0 finite, 1 NaN, 2 Inf; `sub` set for nonzero subnormals.
struct F32Traits {
  using Raw = uint32_t;
  static float value(Raw b) { float f; std::memcpy(&f, &b, 4); return f; }
  static int cls(Raw b) { return (b & 0x7F800000u) != 0x7F800000u ? 0 : ((b & 0x007FFFFFu) ? 1 : 2); }
  static bool sub(Raw b) { return (b & 0x7F800000u) == 0 && (b & 0x007FFFFFu) != 0; }
};
struct BF16Traits {
  using Raw = uint16_t;
  static float value(Raw b) { uint32_t u = uint32_t(b) << 16; float f; std::memcpy(&f, &u, 4); return f; }
  static int cls(Raw b) { return (b & 0x7F80u) != 0x7F80u ? 0 : ((b & 0x007Fu) ? 1 : 2); }
  static bool sub(Raw b) { return (b & 0x7F80u) == 0 && (b & 0x007Fu) != 0; }
};
struct F16Traits {
  using Raw = uint16_t;
  static float value(Raw b) {
    // IEEE binary16 -> binary32, exact and branch-free (vectorisable). Exponent 31 (Inf/NaN) never
    // reaches here: cls() filters it.
    const uint32_t sign = uint32_t(b & 0x8000u) << 16;
    const uint32_t exp = (b >> 10) & 0x1Fu, man = b & 0x3FFu;
    const uint32_t nbits = sign | ((exp + 112u) << 23) | (man << 13);
    float normal;
    std::memcpy(&normal, &nbits, 4);
    const float subn = static_cast<float>(man) * 5.9604644775390625e-8f;  // man x 2^-24
    return exp == 0 ? (sign ? -subn : subn) : normal;
  }
  static int cls(Raw b) { return (b & 0x7C00u) != 0x7C00u ? 0 : ((b & 0x03FFu) ? 1 : 2); }
  static bool sub(Raw b) { return (b & 0x7C00u) == 0 && (b & 0x03FFu) != 0; }
};

// Branch-free body so that `omp simd` vectorises it: the declared reductions allow the compiler to
// keep one partial per SIMD lane and combine them in a fixed order, so the result is still the same on
// every run of the same binary. Non-finite elements contribute 0 to the sums and ±inf to min/max.
template <typename Tr>
void run_chunk(const typename Tr::Raw* p, int64_t n, Partial& r) {
  double sum = 0, sq = 0;
  float mn = std::numeric_limits<float>::infinity(), mx = -mn, amax = 0;
  int64_t nan = 0, inf = 0, zero = 0, sub = 0;
  const float pinf = std::numeric_limits<float>::infinity();
#pragma omp simd reduction(+ : sum, sq, nan, inf, zero, sub) reduction(min : mn) reduction(max : mx, amax)
  for (int64_t i = 0; i < n; ++i) {
    const auto b = p[i];
    const int c = Tr::cls(b);
    const bool fin = c == 0;
    const float v = fin ? Tr::value(b) : 0.0f;
    nan += c == 1;
    inf += c == 2;
    zero += fin && v == 0.0f;
    sub += Tr::sub(b);
    mn = std::min(mn, fin ? v : pinf);
    mx = std::max(mx, fin ? v : -pinf);
    amax = std::max(amax, std::fabs(v));
    const double d = v;
    sum += d;
    sq += d * d;
  }
  r.sum = sum; r.sq = sq; r.amax = amax;
  r.nan = nan; r.inf = inf; r.zero = zero; r.sub = sub;
  r.finite = n - nan - inf;
  r.mn = r.finite ? mn : r.mn;
  r.mx = r.finite ? mx : r.mx;
}

void run_chunk_f64(const double* p, int64_t n, Partial& r) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = p[i];
    if (std::isnan(v)) { ++r.nan; continue; }
    if (std::isinf(v)) { ++r.inf; continue; }
    ++r.finite;
    r.zero += v == 0.0;
    r.sub += std::fpclassify(v) == FP_SUBNORMAL;
    r.mn = std::min(r.mn, v);
    r.mx = std::max(r.mx, v);
    r.amax = std::max(r.amax, std::fabs(v));
    r.sum += v;
    r.sq += v * v;
  }
}

// Small float formats (fp8) and integers: decode through a per-element function.
template <typename T>
void run_chunk_int(const T* p, int64_t n, Partial& r) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(p[i]);
    ++r.finite;
    r.zero += v == 0.0;
    r.mn = std::min(r.mn, v);
    r.mx = std::max(r.mx, v);
    r.amax = std::max(r.amax, std::fabs(v));
    r.sum += v;
    r.sq += v * v;
  }
}

void run_chunk_f8(DType dt, const uint8_t* p, int64_t n, Partial& r) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = decode_bits(dt, p[i]);
    if (std::isnan(v)) { ++r.nan; continue; }
    if (std::isinf(v)) { ++r.inf; continue; }
    ++r.finite;
    r.zero += v == 0.0;
    r.sub += is_subnormal_in(dt, v);
    r.mn = std::min(r.mn, v);
    r.mx = std::max(r.mx, v);
    r.amax = std::max(r.amax, std::fabs(v));
    r.sum += v;
    r.sq += v * v;
  }
}

void dispatch_chunk(DType dt, const std::byte* base, int64_t begin, int64_t n, Partial& r) {
  const std::byte* p = base + begin * dtype_size(dt);
  switch (dt) {
    case DType::kF32: run_chunk<F32Traits>(reinterpret_cast<const uint32_t*>(p), n, r); break;
    case DType::kBF16: run_chunk<BF16Traits>(reinterpret_cast<const uint16_t*>(p), n, r); break;
    case DType::kF16: run_chunk<F16Traits>(reinterpret_cast<const uint16_t*>(p), n, r); break;
    case DType::kF64: run_chunk_f64(reinterpret_cast<const double*>(p), n, r); break;
    case DType::kF8E4M3:
    case DType::kF8E5M2: run_chunk_f8(dt, reinterpret_cast<const uint8_t*>(p), n, r); break;
    case DType::kI8: run_chunk_int(reinterpret_cast<const int8_t*>(p), n, r); break;
    case DType::kI16: run_chunk_int(reinterpret_cast<const int16_t*>(p), n, r); break;
    case DType::kI32: run_chunk_int(reinterpret_cast<const int32_t*>(p), n, r); break;
    case DType::kI64: run_chunk_int(reinterpret_cast<const int64_t*>(p), n, r); break;
    case DType::kU8:
    case DType::kBool: run_chunk_int(reinterpret_cast<const uint8_t*>(p), n, r); break;
  }
}

}  // namespace

// Threads for the statistics of one captured tensor. PyTorch sets the process-wide OpenMP thread count
// to its own intra-op choice (often 1 on small machines) and a hook runs between torch's ops, when
// those cores are idle: use every processor unless the user pinned OMP_NUM_THREADS.
int capture_threads() {
  static const int n = std::getenv("OMP_NUM_THREADS") != nullptr ? 0 : omp_get_num_procs();
  return n > 0 ? n : omp_get_max_threads();
}

TensorStats fused_stats(DType dtype, const void* data, int64_t numel) {
  TensorStats s;
  s.numel = numel;
  if (numel <= 0) return s;
  const auto* base = static_cast<const std::byte*>(data);
  const int64_t chunks = (numel + kChunk - 1) / kChunk;
  std::vector<Partial> parts(static_cast<size_t>(chunks));
// Threads only pay off for large tensors (and hurt on a busy machine): >= 4 chunks = 256 Ki elements.
#pragma omp parallel for schedule(static) if (chunks >= 4) num_threads(capture_threads())
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk;
    dispatch_chunk(dtype, base, begin, std::min(kChunk, numel - begin), parts[static_cast<size_t>(c)]);
  }
  Partial t;
  double sum = 0, sq = 0;
  int64_t finite = 0;
  for (const Partial& p : parts) {  // chunk order: independent of the thread count
    sum += p.sum;
    sq += p.sq;
    finite += p.finite;
    t.nan += p.nan; t.inf += p.inf; t.zero += p.zero; t.sub += p.sub;
    if (p.finite) {
      t.mn = std::min(t.mn, p.mn);
      t.mx = std::max(t.mx, p.mx);
      t.amax = std::max(t.amax, p.amax);
    }
  }
  s.nan_count = t.nan;
  s.inf_count = t.inf;
  s.zero_count = t.zero;
  s.subnormal_count = t.sub;
  if (finite == 0) return s;
  s.min = t.mn;
  s.max = t.mx;
  s.absmax = t.amax;
  s.mean = sum / static_cast<double>(finite);
  s.l2norm = std::sqrt(sq);
  return s;
}

}  // namespace parity::dump
