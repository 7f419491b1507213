// Partial results of the fused compare kernel over a contiguous range of elements, and how two
// adjacent ranges combine. The kernel computes one Partial per block of kBlock elements, combines the
// blocks of a chunk pairwise, and the chunks of a tensor pairwise, so that every sum is a tree of
// short sums and the result does not drift with the tensor size (and does not depend on the number
// of threads: the tree has the same shape whatever runs it).
#pragma once

#include <cstdint>
#include <limits>

namespace parity::metrics_detail {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// Elements per block: two fp64 block buffers (16 KiB) stay in L1 while the kernel makes its passes.
inline constexpr int64_t kBlock = 1024;
// Blocks per chunk, the unit of parallel work (64 Ki elements).
inline constexpr int64_t kBlocksPerChunk = 64;
inline constexpr int64_t kChunk = kBlock * kBlocksPerChunk;

// One side's statistics over its finite elements: count, mean and sum of squared deviations (combined
// with Chan, Golub & LeVeque's pairwise update, which is stable where Σx² − n·mean² is not).
struct SidePartial {
  int64_t finite = 0;
  double mean = 0.0;
  double m2 = 0.0;      // Σ (x − mean)²
  double sumsq = 0.0;   // Σ x²
  double min = kInf, max = -kInf;
  int64_t zero = 0, subnormal = 0, pinf = 0, ninf = 0;  // NaN = elements − finite − pinf − ninf
};

struct Partial {
  int64_t elements = 0;  // elements covered
  int64_t both = 0;      // both sides finite: the elements the error metrics are measured over
  int64_t mismatch = 0;  // a non-finite value on either side whose class differs from the other side

  // Sums over the compared elements (d = t − g).
  double sum_d2 = 0, sum_ad = 0, sum_tg = 0, sum_gg = 0, sum_tt = 0, sum_ulp = 0;
  // Σd·(g + t) = Σt² − Σg²: the fp32-sum kernel sums it (its cosine is taken from the difference); for
  // a block of the fp64 kernels compare_tensors sets Σt² − Σg², whose absolute error (≤ γ·(Σt² + Σg²),
  // far below δ) is as good there. The kernels themselves leave it 0.
  double sum_ds = 0;
  // Some block's sums were added on fp32 lanes (bf16_pass_fp32_sums): every sum is then known within
  // δ = 16·2⁻²⁴ of Σ|terms|, and finish() takes the cosine from the difference where that is the more
  // accurate formula (docs/metrics.md "Error bounds of the kernel").
  bool lane_sums_fp32 = false;
  double max_ulp = 0;
  int64_t ulp_gt1 = 0;
  int64_t rel_lt_1e3 = 0, rel_lt_5e3 = 0;
  int64_t abs_gt_1e6 = 0, abs_gt_1e4 = 0, abs_gt_1e2 = 0;
  int64_t ftz = 0;

  // Maxima with the flat index of their first occurrence (−1: no compared element yet).
  double max_ad = -1;
  int64_t max_ad_index = -1;
  double max_rel = -1;
  int64_t max_rel_index = -1;
  // max_rel is the fp32 rounding of the block's maximum relative error (the bf16 × bf16 fp32-lane
  // kernel), not yet the fp64 value; compare_tensors resolves it before combining (first_index_of_max).
  bool max_rel_fp32 = false;
  // ... and every element of the block has |t| and |g| at most 4 binades apart, so |t − g| has at most
  // 13 significant bits and two different quotients |t − g|/|g| of such elements are more than an fp32
  // ulp apart: equal fp32 maxima of such blocks come from the same quotient, hence equal fp64 maxima.
  bool max_rel_fp32_distinct = false;

  SidePartial g, t;
};

inline void combine_side(SidePartial& a, const SidePartial& b) {
  const int64_t n = a.finite + b.finite;
  if (b.finite > 0) {
    if (a.finite == 0) {
      a.mean = b.mean;
      a.m2 = b.m2;
    } else {
      const double na = static_cast<double>(a.finite), nb = static_cast<double>(b.finite);
      const double nn = static_cast<double>(n);
      const double delta = b.mean - a.mean;
      a.mean += delta * (nb / nn);
      a.m2 += b.m2 + delta * delta * (na * nb / nn);
    }
  }
  a.finite = n;
  a.sumsq += b.sumsq;
  if (b.min < a.min) a.min = b.min;
  if (b.max > a.max) a.max = b.max;
  a.zero += b.zero;
  a.subnormal += b.subnormal;
  a.pinf += b.pinf;
  a.ninf += b.ninf;
}

// Maxima keep the earlier index on ties because `a` always covers the elements before `b`.
inline void combine_max(double& m, int64_t& idx, double bm, int64_t bidx) {
  if (bm > m) {
    m = bm;
    idx = bidx;
  }
}

// `a` covers the elements immediately before those of `b`.
inline void combine(Partial& a, const Partial& b) {
  a.elements += b.elements;
  a.both += b.both;
  a.mismatch += b.mismatch;
  a.sum_d2 += b.sum_d2;
  a.sum_ad += b.sum_ad;
  a.sum_tg += b.sum_tg;
  a.sum_gg += b.sum_gg;
  a.sum_tt += b.sum_tt;
  a.sum_ds += b.sum_ds;
  a.sum_ulp += b.sum_ulp;
  a.lane_sums_fp32 = a.lane_sums_fp32 || b.lane_sums_fp32;
  if (b.max_ulp > a.max_ulp) a.max_ulp = b.max_ulp;
  a.ulp_gt1 += b.ulp_gt1;
  a.rel_lt_1e3 += b.rel_lt_1e3;
  a.rel_lt_5e3 += b.rel_lt_5e3;
  a.abs_gt_1e6 += b.abs_gt_1e6;
  a.abs_gt_1e4 += b.abs_gt_1e4;
  a.abs_gt_1e2 += b.abs_gt_1e2;
  a.ftz += b.ftz;
  combine_max(a.max_ad, a.max_ad_index, b.max_ad, b.max_ad_index);
  combine_max(a.max_rel, a.max_rel_index, b.max_rel, b.max_rel_index);
  combine_side(a.g, b.g);
  combine_side(a.t, b.t);
}

}  // namespace parity::metrics_detail
