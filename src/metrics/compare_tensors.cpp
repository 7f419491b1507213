// compare_tensors (include/parity/metrics.h): one pass over both tensors.
//
// The flat element range is cut into chunks of kChunk elements (the unit of parallel work, one
// OpenMP task each) and each chunk into blocks of kBlock elements. A block is decoded into two fp64
// buffers (decode_to_double handles every dtype, byte order and layout) and measured by the block
// kernel; block partials are combined pairwise into a chunk partial, chunk partials pairwise into the
// tensor's. The tree has the same shape whatever the thread count, so results are reproducible bit
// for bit, and every sum is a tree of short sums, so they do not drift with the tensor size.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "metrics/block_kernel.h"
#include "metrics/locate_maxima.h"
#include "metrics/pair_decoder.h"
#include "metrics/partial.h"
#include "metrics/softmax_kl.h"
#include "parity/metrics.h"

namespace parity {
namespace {

using metrics_detail::kBlock;
using metrics_detail::kBlocksPerChunk;
using metrics_detail::kChunk;
using metrics_detail::KernelParams;
using metrics_detail::Partial;
using metrics_detail::UlpMode;

// Pairwise (tree) reduction of parts[0..n) into parts[0]; parts[i] covers elements before parts[i+1].
void reduce_pairwise(Partial* parts, int64_t n) {
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t i = 0; i + width < n; i += 2 * width) metrics_detail::combine(parts[i], parts[i + width]);
  }
}

KernelParams make_params(DType target, const MetricOptions& options) {
  KernelParams p;
  p.rel_epsilon = options.rel_epsilon;
  const FloatFormat* f = float_format(target);
  if (f == nullptr) {
    p.ulp_mode = UlpMode::kOne;
    p.min_normal_t = 0.0;  // integers have no subnormals
  } else {
    p.min_normal_t = f->min_normal;
    if (target == DType::kF64) {
      p.ulp_mode = UlpMode::kDivide;
      p.ulp_sub = f->min_subnormal;
      p.ulp_mant_scale = std::ldexp(1.0, -f->mantissa_bits);
    } else {
      p.ulp_mode = UlpMode::kPow2;
      p.ulp_pow2_base = static_cast<uint64_t>(2046 + f->mantissa_bits) << 52;
      p.ulp_sub = 1.0 / f->min_subnormal;
    }
  }
  p.ftz_tiny = options.ftz_tiny > 0 ? options.ftz_tiny : p.min_normal_t;
  return p;
}

void finish_side(const metrics_detail::SidePartial& s, int64_t numel, TensorStats& out) {
  out.numel = numel;
  out.pinf_count = s.pinf;
  out.ninf_count = s.ninf;
  out.inf_count = s.pinf + s.ninf;
  out.nan_count = numel - s.finite - s.pinf - s.ninf;
  out.zero_count = s.zero;
  out.subnormal_count = s.subnormal;
  if (s.finite == 0) return;  // statistics stay NaN: nothing finite to describe
  out.min = s.min;
  out.max = s.max;
  out.mean = s.mean;
  out.l2norm = std::sqrt(s.sumsq);
  out.std = std::sqrt(s.m2 / static_cast<double>(s.finite));
  out.absmax = std::max(std::fabs(s.min), std::fabs(s.max));
}

// msprobe's FLOAT_EPSILON: a norm at or below it counts as zero for the cosine.
constexpr double kNormZero = std::numeric_limits<double>::epsilon();

bool both_norms_zero(const Partial& p) { return std::sqrt(p.sum_gg) <= kNormZero && std::sqrt(p.sum_tt) <= kNormZero; }

void finish(const Partial& p, int64_t numel, PairMetrics& m) {
  m.numel = numel;
  m.compared = p.both;
  m.nonfinite_mismatch = p.mismatch;
  m.nonfinite_agree = p.mismatch == 0;
  m.ftz_count = p.ftz;
  finish_side(p.g, numel, m.golden);
  finish_side(p.t, numel, m.target);
  if (p.both == 0) return;  // no compared element: the error metrics stay NaN

  const double n = static_cast<double>(p.both);
  m.euclidean = std::sqrt(p.sum_d2);
  m.rmse = std::sqrt(p.sum_d2 / n);
  const double norm_g = std::sqrt(p.sum_gg), norm_t = std::sqrt(p.sum_tt);
  if (p.sum_gg > 0) {
    m.rel_l2 = m.euclidean / norm_g;
  } else {
    m.rel_l2 = p.sum_d2 == 0 ? 0.0 : kNaN;
  }
  // torch.ao.ns: SQNR = 20·log10(‖g‖/‖t − g‖) = 10·log10(Σg²/Σd²); identical tensors → +inf.
  m.sqnr_db = p.sum_d2 == 0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(p.sum_gg / p.sum_d2);

  // msprobe's cosine: a single element is "unsupported"; norms at or below 2^-52 count as zero (but
  // see tiny_cosine: both sides non-zero are measured, not called equal).
  if (numel <= 1) {
    m.cosine = kNaN;
  } else if (norm_t <= kNormZero && norm_g <= kNormZero) {
    m.cosine = 1.0;
  } else if (norm_t <= kNormZero || norm_g <= kNormZero) {
    m.cosine = kNaN;
  } else if (p.lane_sums_fp32 && p.sum_d2 < 0.8 * norm_g * norm_t) {
    // fp32-lane sums (each within δ = 16·2⁻²⁴ of Σ|terms|) leave the direct formula below within 2δ of
    // the truth: too coarse where 1 − cos is 1e-5. From the difference instead, with
    // Σd² = ‖t‖² + ‖g‖² − 2Σtg and ‖t‖ − ‖g‖ = Σd·(g + t) / (‖t‖ + ‖g‖):
    //   1 − cos = (Σd² − (‖t‖ − ‖g‖)²) / (2‖g‖‖t‖),
    // within 5δ·Σd²/(2‖g‖‖t‖) (docs/metrics.md): relative to 1 − cos where the sides differ by noise,
    // and tighter than 2δ wherever Σd² < 0.8·‖g‖‖t‖.
    const double norm_diff = p.sum_ds / (norm_t + norm_g);
    const double one_minus_cos = (p.sum_d2 - norm_diff * norm_diff) / (2 * norm_g * norm_t);
    m.cosine = std::clamp(1.0 - one_minus_cos, -1.0, 1.0);
  } else {
    // sqrt(Σt²·Σg²) is exact for identical sides (sqrt(s·s) = s), so identical tensors give exactly 1;
    // fall back to the product of norms when Σt²·Σg² leaves the double range. Cauchy–Schwarz bounds
    // |cos| by 1; a rounding excess of an ulp is clamped so "cosine 1.0000000000000002" never appears.
    const double prod = p.sum_tt * p.sum_gg;
    const double denom = (std::isfinite(prod) && prod > 0) ? std::sqrt(prod) : norm_t * norm_g;
    m.cosine = std::clamp(p.sum_tg / denom, -1.0, 1.0);
  }

  m.max_abs = p.max_ad;
  m.max_abs_index = p.max_ad_index;
  m.mean_abs = p.sum_ad / n;
  m.max_rel = p.max_rel;
  m.max_rel_index = p.max_rel_index;
  m.thousandth_ratio = static_cast<double>(p.rel_lt_1e3) / n;
  m.five_thousandth_ratio = static_cast<double>(p.rel_lt_5e3) / n;
  m.frac_abs_gt_1e6 = static_cast<double>(p.abs_gt_1e6) / n;
  m.frac_abs_gt_1e4 = static_cast<double>(p.abs_gt_1e4) / n;
  m.frac_abs_gt_1e2 = static_cast<double>(p.abs_gt_1e2) / n;
  m.ulp_max = p.max_ulp;
  m.ulp_mean = p.sum_ulp / n;
  m.frac_ulp_gt1 = static_cast<double>(p.ulp_gt1) / n;
}

// The cosine when both norms are at or below 2^-52. msprobe calls that 1 ("both zero"), which made x
// and -x at 1e-18 identical. When both sides hold a non-zero compared value the cosine, being
// scale-invariant, is computed from each side divided by its largest magnitude (no square underflows,
// even for values near the smallest subnormal). A side that is all zero keeps msprobe's 1. A cold path:
// two extra passes over tensors whose norms are this small.
double tiny_cosine(const TensorView& golden, const TensorView& target, int64_t numel) {
  constexpr int64_t kB = 4096;
  std::vector<double> gb(kB), tb(kB);
  auto for_each_compared = [&](auto&& fn) {
    for (int64_t b = 0; b < numel; b += kB) {
      const int64_t n = std::min(kB, numel - b);
      decode_to_double(golden, b, n, gb.data());
      decode_to_double(target, b, n, tb.data());
      for (int64_t i = 0; i < n; ++i)
        if (std::isfinite(gb[i]) && std::isfinite(tb[i])) fn(gb[i], tb[i]);
    }
  };
  double max_g = 0, max_t = 0;
  for_each_compared([&](double g, double t) {
    max_g = std::max(max_g, std::fabs(g));
    max_t = std::max(max_t, std::fabs(t));
  });
  if (max_g == 0 || max_t == 0) return 1.0;
  double s_tg = 0, s_gg = 0, s_tt = 0;
  for_each_compared([&](double g, double t) {
    g /= max_g;
    t /= max_t;
    s_tg += t * g;
    s_gg += g * g;
    s_tt += t * t;
  });
  return std::clamp(s_tg / std::sqrt(s_tt * s_gg), -1.0, 1.0);
}

// Pages already read are handed back (a 4 GiB mapped pair then stays at a few MiB resident, not
// 8 GiB; issue 14 §5), in whole regions of kReleaseRegion = 8 MiB, a multiple of 2 MiB: the page cache
// maps large folios with one huge PMD each, and zapping part of one splits it, with a TLB shootdown to
// the other threads every time (per 256 KiB chunk that cost parity 0.15 s of system time per GiB of
// bf16); 8 MiB rather than 2 makes a quarter of the calls and shootdowns (docs/benchmarks.md, bf16 on
// AVX-512) for at most three regions resident per file. The chunk [begin, end) that crosses a region
// boundary B releases the region before the previous one, [B − 2R, B − R), so a neighbouring chunk still
// being read by another thread is left alone; release_tail() hands back the rest when the tensor is done.
constexpr uintptr_t kReleaseRegion = uintptr_t{8} << 20;

void release_bytes(const TensorView& v, uintptr_t from, uintptr_t to) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(v.data), es = static_cast<uintptr_t>(dtype_size(v.dtype));
  if (to <= from || to <= base) return;
  from = std::max(from, base);
  const int64_t b = static_cast<int64_t>((from - base + es - 1) / es), e = static_cast<int64_t>((to - base) / es);
  release_pages(v, b, std::min(e, v.numel));  // whole pages inside [b, e) only
}

void release_behind(const TensorView& v, int64_t begin, int64_t end) {
  if (!v.file_mapped) return;
  const uintptr_t base = reinterpret_cast<uintptr_t>(v.data), es = static_cast<uintptr_t>(dtype_size(v.dtype));
  const uintptr_t lo = base + static_cast<uintptr_t>(begin) * es, hi = base + static_cast<uintptr_t>(end) * es;
  const uintptr_t boundary = hi & ~(kReleaseRegion - 1);  // the last region boundary at or below hi
  if (boundary <= lo || boundary < 2 * kReleaseRegion) return;  // this chunk crosses none
  release_bytes(v, boundary - 2 * kReleaseRegion, boundary - kReleaseRegion);
}

void release_tail(const TensorView& v) {
  if (!v.file_mapped) return;
  const uintptr_t base = reinterpret_cast<uintptr_t>(v.data);
  const uintptr_t hi = base + static_cast<uintptr_t>(v.numel) * static_cast<uintptr_t>(dtype_size(v.dtype));
  const uintptr_t from = (hi & ~(kReleaseRegion - 1)) - std::min(hi & ~(kReleaseRegion - 1), 2 * kReleaseRegion);
  release_bytes(v, from, hi);
}

// Subnormal elements (in the target dtype: 0 < |x| < min_normal) of a tensor as stored. The general
// kernel counts them on the values it compares; for a scaled target (MetricOptions::target_scale_log2)
// those are not what the target holds, so this second pass over the target alone counts the stored ones.
int64_t count_stored_subnormals(const TensorView& v, double min_normal, int threads) {
  if (!(min_normal > 0)) return 0;  // integers have no subnormals
  constexpr int64_t kB = 4096;
  const int64_t nblocks = (v.numel + kB - 1) / kB;
  int64_t count = 0;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(+ : count) if (nblocks > 1 && threads > 1)
  for (int64_t blk = 0; blk < nblocks; ++blk) {
    double buf[kB];
    const int64_t b = blk * kB, n = std::min(kB, v.numel - b);
    decode_to_double(v, b, n, buf);
    for (int64_t i = 0; i < n; ++i) count += buf[i] != 0 && std::fabs(buf[i]) < min_normal;
  }
  return count;
}

Status check_view(const TensorView& v, const char* side) {
  if (v.numel < 0) return Status::Invalid(std::string(side) + " tensor has a negative element count");
  if (v.numel > 0 && v.data == nullptr) {
    return Status::Invalid(std::string(side) + " tensor has " + std::to_string(v.numel) + " elements but no data");
  }
  return Status::OK();
}


Status check_inputs(const TensorView& golden, const TensorView& target, const MetricOptions& options) {
  PARITY_RETURN_NOT_OK(check_view(golden, "golden"));
  PARITY_RETURN_NOT_OK(check_view(target, "target"));
  if (golden.numel != target.numel) {
    return Status::Invalid("element counts differ: golden " + shape_to_string(golden.shape) + " has " +
                           std::to_string(golden.numel) + " elements, target " +
                           shape_to_string(target.shape) + " has " + std::to_string(target.numel));
  }
  if (!(options.rel_epsilon > 0) || !std::isfinite(options.rel_epsilon)) {
    return Status::Invalid("rel_epsilon must be a positive finite number");
  }
  if (!(options.ftz_tiny >= 0) || !std::isfinite(options.ftz_tiny)) {
    return Status::Invalid("ftz_tiny must be a non-negative finite number");
  }
  return Status::OK();
}

// One pass over a pair, chunk by chunk (each chunk one OpenMP task): its kernels, chosen once, and the
// per-chunk results the pass leaves.
struct ChunkPass {
  const TensorView& golden;
  const TensorView& target;
  const KernelParams params;
  const metrics_detail::BlockFn kernel;
  const metrics_detail::PairDecoder& decoder;
  // Both sides contiguous, native order and fp32/bf16, and not a scaled target (the fused kernels read
  // the stored values): the fused and span kernels read them in place.
  const metrics_detail::FastFn fused;
  const metrics_detail::SpanFn span;
  const int64_t numel, g_size, t_size;
  std::vector<Partial> chunks;
  std::vector<metrics_detail::ChunkMaxima> maxima;

  ChunkPass(const TensorView& g, const TensorView& t, const MetricOptions& options,
            const metrics_detail::PairDecoder& dec, bool in_place)
      : golden(g), target(t), params(make_params(t.dtype, options)), kernel(metrics_detail::select_block_kernel()),
        decoder(dec), fused(in_place ? metrics_detail::select_fast_kernel(g.dtype, t.dtype) : nullptr),
        span(in_place ? metrics_detail::select_span_kernel(g.dtype, t.dtype) : nullptr), numel(g.numel),
        g_size(dtype_size(g.dtype)), t_size(dtype_size(t.dtype)),
        chunks(static_cast<size_t>(std::max<int64_t>(count(), 1))), maxima(static_cast<size_t>(count())) {}

  int64_t count() const { return (numel + kChunk - 1) / kChunk; }

  // Chunk c. A span kernel measures kSpanBlocks blocks per call; the fused kernel, one block, is tried
  // while it keeps succeeding; after a few blocks that are not clean (zeros, NaN, subnormals) the rest of
  // the chunk goes straight to the general kernel. Either way a block's Partial is the general kernel's
  // within the bounds of docs/metrics.md "Error bounds of the kernel" (bit for bit but for the sides' m2,
  // except the bf16 fp32-lane kernel's sums).
  void operator()(int64_t c) {
    constexpr int64_t kSpan = metrics_detail::kSpanBlocks * kBlock;
    alignas(64) double gb[kBlock + 4];
    alignas(64) double tb[kBlock + 4];
    Partial blocks[kBlocksPerChunk];
    const int64_t begin = c * kChunk, end = std::min(numel, begin + kChunk);
    int fast_misses = 0, span_misses = 0;
    bool compensate = false, two_pass = false;
    int64_t nb = 0;
    int64_t first_block[kBlocksPerChunk];
    metrics_detail::ChunkMaxima& cm = maxima[static_cast<size_t>(c)];
    for (int64_t u = begin; u < end; u += kSpan) {
      const int64_t u_end = std::min(end, u + kSpan);
      // A whole span in one call where a span kernel takes it (after two refusals in a chunk, no more
      // tries: each costs a pass over the span); otherwise block by block.
      if (span != nullptr && span_misses < 2 && !compensate && !two_pass && u_end - u == kSpan) {
        if (span(golden.data + u * g_size, target.data + u * t_size, kSpan, params, blocks[nb])) {
          first_block[nb++] = (u - begin) / kBlock;
          cm.span_starts |= uint64_t{1} << ((u - begin) / kBlock);
          continue;
        }
        ++span_misses;
      }
      for (int64_t b = u; b < u_end; b += kBlock) {
        const int64_t n = std::min(kBlock, end - b);
        Partial& blk = blocks[nb];
        first_block[nb++] = (b - begin) / kBlock;
        const bool done = fused != nullptr && fast_misses < 4 &&
                          fused(golden.data + b * g_size, target.data + b * t_size, n, params, blk, compensate, two_pass);
        if (!done) {
          fast_misses += fused != nullptr;
          decoder.decode(b, n, gb, tb);
          kernel(gb, tb, n, params, blk);
        }
      }
    }
    for (int64_t k = 0; k < nb; ++k) {
      if (!blocks[k].lane_sums_fp32) blocks[k].sum_ds = blocks[k].sum_tt - blocks[k].sum_gg;  // see Partial::sum_ds
    }
    metrics_detail::summarise_maxima(blocks, first_block, nb, cm);
    reduce_pairwise(blocks, nb);
    chunks[static_cast<size_t>(c)] = blocks[0];
    release_behind(golden, begin, end);
    release_behind(target, begin, end);
  }
};

}  // namespace

Result<PairMetrics> compare_tensors(const TensorView& golden, const TensorView& target,
                                    const MetricOptions& options) {
  PARITY_RETURN_NOT_OK(check_inputs(golden, target, options));
  const int64_t numel = golden.numel;
  // A scaled target, or extremes read as infinities: the values compared are not the stored ones.
  const bool scaled = options.target_scale_log2 != 0 || options.extremes_as_infinities;
  const metrics_detail::PairDecoder decoder(golden, target, std::ldexp(1.0, -options.target_scale_log2),
                                            options.extremes_as_infinities, options.golden_infinity_from,
                                            options.target_infinity_from);
  ChunkPass pass(golden, target, options, decoder, decoder.both_direct() && !scaled);
  const int64_t nchunks = pass.count();
  const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  if (nchunks <= 1 || threads <= 1) {
    for (int64_t c = 0; c < nchunks; ++c) pass(c);
  } else {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int64_t c = 0; c < nchunks; ++c) pass(c);
  }
  reduce_pairwise(pass.chunks.data(), nchunks);
  metrics_detail::locate_maxima(pass.chunks[0], pass.maxima, decoder, pass.params, numel);
  release_tail(golden);
  release_tail(target);

  PairMetrics m;
  finish(pass.chunks[0], numel, m);  // an empty tensor leaves the default Partial: counts 0, metrics NaN
  // tiny_cosine reads the stored values: a cosine does not change with a positive scale.
  if (numel > 1 && pass.chunks[0].both > 0 && both_norms_zero(pass.chunks[0])) m.cosine = tiny_cosine(golden, target, numel);
  if (scaled) m.target.subnormal_count = count_stored_subnormals(target, pass.params.min_normal_t, threads);
  if (options.kl && !scaled) PARITY_RETURN_NOT_OK(metrics_detail::softmax_kl(golden, target, threads, m));
  return m;
}

}  // namespace parity
