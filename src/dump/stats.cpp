// fused_stats: the capture statistics of one tensor in a single pass (docs/capture.md, "Statistics").
//
// Definitions are those of parity::compute_stats (src/numeric/tensor.cpp) so stored and recomputed
// statistics agree: NaN and ±Inf are counted and excluded from min, max, absmax, mean and L2 norm;
// mean = Σ finite / #finite; zero_count counts ±0; subnormal_count counts nonzero values whose exponent
// field is all zeros in the tensor's own dtype (so a bf16 tensor is judged by bf16's range, not fp32's).
// Two differences in what is measured: no std, and Inf as one total (capture manifests store "inf"; the
// lanes count Inf unsigned), so pinf_count/ninf_count stay 0 — the split unknown (parity/tensor.h).
// Capture differs from compute_stats in speed otherwise: it reads native contiguous buffers directly,
// classifies by bit pattern, and splits the work into fixed 64 Ki-element chunks (OpenMP) whose partial
// sums are added in chunk order — the result is independent of the thread count. Within a chunk the
// float formats use 8 lanes in a fixed order (stats_lanes.h), computed with AVX2 where the CPU has it
// and bit-identical without.
#include <algorithm>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "dump/stats_lanes.h"
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

// F32 / BF16 / F16: the 8-lane definition (stats_lanes.h), SIMD where the CPU has it, the portable
// loop for the tail and elsewhere; the lanes are folded in lane order.
void fold_lanes(const detail::Lanes& a, int64_t n, Partial& r);

template <typename Tr>
void run_chunk(DType dt, const typename Tr::Raw* p, int64_t n, Partial& r) {
  detail::Lanes a;
  const int64_t done = detail::lanes_simd(dt, p, n, a);
  detail::lanes_scalar<Tr>(p, done, n, a);
  fold_lanes(a, n, r);
}

// Two chunks of n elements each through the paired kernel (AVX-512) where it applies: each chunk's lanes
// are those run_chunk gives it, bit for bit.
template <typename Tr>
void run_chunk_pair(DType dt, const typename Tr::Raw* pa, const typename Tr::Raw* pb, int64_t n, Partial& ra,
                    Partial& rb) {
  detail::Lanes la, lb;
  const int64_t done = detail::lanes_simd_pair(dt, pa, pb, n, la, lb);
  if (done == 0) {
    run_chunk<Tr>(dt, pa, n, ra);
    run_chunk<Tr>(dt, pb, n, rb);
    return;
  }
  detail::lanes_scalar<Tr>(pa, done, n, la);
  detail::lanes_scalar<Tr>(pb, done, n, lb);
  fold_lanes(la, n, ra);
  fold_lanes(lb, n, rb);
}

// The 8 lanes of one chunk folded in lane order.
void fold_lanes(const detail::Lanes& a, int64_t n, Partial& r) {
  float mn = std::numeric_limits<float>::infinity(), mx = -mn, amax = 0;
  for (int j = 0; j < detail::kLanes; ++j) {
    r.sum += a.sum[j];
    r.sq += a.sq[j];
    mn = std::min(mn, a.mn[j]);
    mx = std::max(mx, a.mx[j]);
    amax = std::max(amax, a.amax[j]);
  }
  r.nan = a.nan; r.inf = a.inf; r.zero = a.zero; r.sub = a.sub;
  r.finite = n - a.nan - a.inf;
  r.amax = amax;
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
    case DType::kF32: run_chunk<detail::F32Traits>(dt, reinterpret_cast<const uint32_t*>(p), n, r); break;
    case DType::kBF16: run_chunk<detail::BF16Traits>(dt, reinterpret_cast<const uint16_t*>(p), n, r); break;
    case DType::kF16: run_chunk<detail::F16Traits>(dt, reinterpret_cast<const uint16_t*>(p), n, r); break;
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

// Chunks c and c + 1, both kChunk long, starting at element `begin`.
void dispatch_pair(DType dt, const std::byte* base, int64_t begin, Partial& ra, Partial& rb) {
  const std::byte* pa = base + begin * dtype_size(dt);
  const std::byte* pb = pa + kChunk * dtype_size(dt);
  switch (dt) {
    case DType::kF32:
      run_chunk_pair<detail::F32Traits>(dt, reinterpret_cast<const uint32_t*>(pa), reinterpret_cast<const uint32_t*>(pb),
                                        kChunk, ra, rb);
      break;
    case DType::kBF16:
      run_chunk_pair<detail::BF16Traits>(dt, reinterpret_cast<const uint16_t*>(pa),
                                         reinterpret_cast<const uint16_t*>(pb), kChunk, ra, rb);
      break;
    case DType::kF16:
      run_chunk_pair<detail::F16Traits>(dt, reinterpret_cast<const uint16_t*>(pa),
                                        reinterpret_cast<const uint16_t*>(pb), kChunk, ra, rb);
      break;
    default:
      dispatch_chunk(dt, base, begin, kChunk, ra);
      dispatch_chunk(dt, base, begin + kChunk, kChunk, rb);
  }
}

}  // namespace

TensorStats fused_stats(DType dtype, const void* data, int64_t numel, int threads) {
  TensorStats s;
  s.numel = numel;
  if (numel <= 0) {
    set_no_finite_values(s);
    return s;
  }
  const auto* base = static_cast<const std::byte*>(data);
  const int64_t chunks = (numel + kChunk - 1) / kChunk;
  std::vector<Partial> parts(static_cast<size_t>(chunks));
  // Chunks go in pairs (the AVX-512 kernel summarises two at once); each chunk's partial result is the
  // same whichever way it was computed.
  const int64_t pairs = (chunks + 1) / 2;
#pragma omp parallel for schedule(static) if (threads > 1 && pairs > 1) num_threads(std::max(threads, 1))
  for (int64_t q = 0; q < pairs; ++q) {
    const int64_t c = 2 * q, begin = c * kChunk;
    if (numel - begin >= 2 * kChunk) {
      dispatch_pair(dtype, base, begin, parts[static_cast<size_t>(c)], parts[static_cast<size_t>(c + 1)]);
      continue;
    }
    for (int64_t k = c; k < std::min(c + 2, chunks); ++k)
      dispatch_chunk(dtype, base, k * kChunk, std::min(kChunk, numel - k * kChunk), parts[static_cast<size_t>(k)]);
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
  if (finite == 0) {  // no finite element to describe: published as 0 (parity/tensor.h)
    set_no_finite_values(s);
    return s;
  }
  s.min = t.mn;
  s.max = t.mx;
  s.absmax = t.amax;
  s.mean = sum / static_cast<double>(finite);
  s.l2norm = std::sqrt(sq);
  return s;
}

}  // namespace parity::dump
