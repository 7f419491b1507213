// Body of the block kernel (see block_kernel.h). Included by exactly two translation units, each of
// which defines PARITY_BLOCK_NS (the namespace that keeps the two compilations apart) and sets its
// own target options before including this file.
//
// Formulas (docs/metrics.md): over the compared elements (both sides finite), d = t − g;
//   Σd², Σ|d|, Σtg, Σg², Σt²                         → euclidean, rmse, rel_l2, sqnr, cosine
//   max |d| and its first index                       → max_abs
//   rel = |d|/|g|, or |(t+ε) − (g+ε)|/(g+ε) at g = 0   → msprobe max relative error and ratios
//   ulp = |d| / ulp_at(target dtype, g)              → max, mean, fraction > 1
// and per side over that side's finite elements: count, mean, Σ(x−mean)², Σx², min, max, zeros,
// subnormals in the target's dtype, ±Inf.
#ifndef PARITY_BLOCK_NS
#error "define PARITY_BLOCK_NS before including block_kernel_impl.h"
#endif

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "metrics/block_kernel.h"
#include "parity/dtype.h"

#ifdef PARITY_BLOCK_AVX
#include <immintrin.h>  // the AVX variants' fp32 → fp64 widening (LoadF32 / LoadBF16)
#endif

// The vector types never cross a non-inline function boundary, so GCC's note that returning them
// without AVX changes the ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
// Never contract a*b + c into an FMA (GCC does by default in C++ when the target has FMA): rounding
// must be the same on every variant and match the numpy reference.
#pragma GCC optimize("fp-contract=off")

namespace parity::metrics_detail::PARITY_BLOCK_NS {

typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4i __attribute__((vector_size(32)));
typedef uint64_t v4u __attribute__((vector_size(32)));  // bit arithmetic that may wrap

static inline v4d splat(double a) { return v4d{a, a, a, a}; }
// std::fmax (the larger; a NaN argument loses to a number), inlined: GCC calls libm's for std::fmax,
// a call per guard in every block.
static inline double fmax_inline(double a, double b) { return std::isnan(a) ? b : std::isnan(b) ? a : a > b ? a : b; }
static inline v4i splati(int64_t a) { return v4i{a, a, a, a}; }
static inline v4d load(const double* p) {
  v4d v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline v4d vabs(v4d x) { return (v4d)((v4i)x & splati(0x7fffffffffffffffLL)); }
static inline v4d keep(v4d x, v4i mask) { return (v4d)((v4i)x & mask); }  // x where mask, else +0
static inline double hsum(v4d v) { return (v[0] + v[1]) + (v[2] + v[3]); }
static inline int64_t hsumi(v4i v) { return (v[0] + v[1]) + (v[2] + v[3]); }
static inline double hmax(v4d v) {
  double m = v[0];
  for (int l = 1; l < 4; ++l) m = v[l] > m ? v[l] : m;
  return m;
}
static inline double hmin(v4d v) {
  double m = v[0];
  for (int l = 1; l < 4; ++l) m = v[l] < m ? v[l] : m;
  return m;
}
// Class of a value for the non-finite position rule: 0 finite, 1 NaN, 2 +Inf, 3 −Inf.
static inline int nonfinite_class(double x) {
  if (std::isnan(x)) return 1;
  if (std::isinf(x)) return x > 0 ? 2 : 3;
  return 0;
}

template <UlpMode kMode>
static inline v4d ulp_error(v4d ad, v4d ag, const KernelParams& p) {
  if constexpr (kMode == UlpMode::kOne) {
    (void)ag;
    return ad;
  } else if constexpr (kMode == UlpMode::kPow2) {
    // For |g| ≥ min_normal_t (a normal double with biased exponent E), ulp_at = 2^(E−1023−m), so
    // 1/ulp = 2^(1023−E+m): the double whose exponent field is 2046 + m − E. Exact, hence equal to
    // |d| / ulp_at.
    const v4u expo = (v4u)ag & (v4u)splati(0x7ff0000000000000LL);
    const v4u base = {p.ulp_pow2_base, p.ulp_pow2_base, p.ulp_pow2_base, p.ulp_pow2_base};
    const v4d inv = (v4d)(base - expo);  // modulo 2^64: the base itself exceeds INT64_MAX
    const v4i sub = (v4i)(ag < splat(p.min_normal_t));
    return ad * (sub ? splat(p.ulp_sub) : inv);
  } else {
    // fp64 target: ulp = 2^(E−1023) · 2^-52 (exact), or min_subnormal below min_normal.
    const v4d pow2 = (v4d)((v4i)ag & splati(0x7ff0000000000000LL));
    const v4i sub = (v4i)(ag < splat(p.min_normal_t));
    const v4d ulp = sub ? splat(p.ulp_sub) : pow2 * splat(p.ulp_mant_scale);
    return ad / ulp;
  }
}

// Error metrics over the compared elements. Lanes where either side is non-finite become (0, 0):
// they add nothing to the sums, nothing to the "greater than" counts, and are masked out of the
// "less than" counts. Maxima are values only; compare_tensors finds the first index by a scan of the
// few blocks that raise the running maximum (a non-compared lane's 0 never beats a compared one).
//
// kFinite: the caller has checked that every value of the block is finite (no padding either), so the
// masks are constant and left out: the common case runs about a third fewer instructions.
template <UlpMode kMode, bool kFinite>
static void error_pass(const double* g, const double* t, int64_t n4, const KernelParams& p, Partial& out) {
  const v4d zero = splat(0.0), inf = splat(INFINITY), eps = splat(p.rel_epsilon);
  const v4d one = splat(1.0), t6 = splat(1e-6), t4 = splat(1e-4), t2 = splat(1e-2);
  const v4d r3 = splat(1e-3), r53 = splat(5e-3);
  v4d s_d2 = zero, s_ad = zero, s_tg = zero, s_gg = zero, s_tt = zero, s_ulp = zero;
  v4d m_ulp = zero, m_ad = zero, m_rel = zero;
  v4i c_both = splati(0), c_ulp1 = splati(0), c_r3 = splati(0), c_r53 = splati(0);
  v4i c_a6 = splati(0), c_a4 = splati(0), c_a2 = splati(0);
  for (int64_t i = 0; i < n4; i += 4) {
    const v4d gv = load(g + i), tv = load(t + i);
    v4i both;
    v4d gm, tm;
    if constexpr (kFinite) {
      both = splati(-1);
      gm = gv;
      tm = tv;
    } else {
      both = (v4i)(vabs(gv) < inf) & (v4i)(vabs(tv) < inf);
      gm = keep(gv, both);
      tm = keep(tv, both);
      c_both -= both;
    }
    const v4d d = tm - gm;
    const v4d ad = vabs(d), ag = vabs(gm);
    s_d2 += d * d;
    s_ad += ad;
    s_tg += gm * tm;
    s_gg += gm * gm;
    s_tt += tm * tm;
    m_ad = ad > m_ad ? ad : m_ad;
    c_a6 -= (v4i)(ad > t6);
    c_a4 -= (v4i)(ad > t4);
    c_a2 -= (v4i)(ad > t2);
    // msprobe relative error: |t − g| / |g|, or |(t + ε) − (g + ε)| / (g + ε) where g = 0.
    const v4i gz = (v4i)(gm == zero);
    const v4d num = gz ? vabs((tm + eps) - eps) : ad;
    const v4d den = gz ? eps : ag;
    const v4d rel = num / den;
    if constexpr (kFinite) {
      c_r3 -= (v4i)(rel < r3);
      c_r53 -= (v4i)(rel < r53);
    } else {
      c_r3 -= (v4i)(rel < r3) & both;
      c_r53 -= (v4i)(rel < r53) & both;
    }
    m_rel = rel > m_rel ? rel : m_rel;
    const v4d ue = ulp_error<kMode>(ad, ag, p);
    s_ulp += ue;
    m_ulp = ue > m_ulp ? ue : m_ulp;
    c_ulp1 -= (v4i)(ue > one);
  }
  out.sum_d2 = hsum(s_d2);
  out.sum_ad = hsum(s_ad);
  out.sum_tg = hsum(s_tg);
  out.sum_gg = hsum(s_gg);
  out.sum_tt = hsum(s_tt);
  out.sum_ulp = hsum(s_ulp);
  out.max_ulp = hmax(m_ulp);
  out.both = kFinite ? n4 : hsumi(c_both);
  out.ulp_gt1 = hsumi(c_ulp1);
  out.rel_lt_1e3 = hsumi(c_r3);
  out.rel_lt_5e3 = hsumi(c_r53);
  out.abs_gt_1e6 = hsumi(c_a6);
  out.abs_gt_1e4 = hsumi(c_a4);
  out.abs_gt_1e2 = hsumi(c_a2);
  out.max_ad = out.both > 0 ? hmax(m_ad) : -1.0;
  out.max_rel = out.both > 0 ? hmax(m_rel) : -1.0;
  out.max_ad_index = out.max_rel_index = -1;
}

// Flush-to-zero signature (golden nonzero and below the tiny bound, target exactly zero); only run
// on blocks whose target holds a zero.
static int64_t ftz_pass(const double* g, const double* t, int64_t n4, const KernelParams& p) {
  const v4d zero = splat(0.0), tiny = splat(p.ftz_tiny);
  v4i c = splati(0);
  for (int64_t i = 0; i < n4; i += 4) {
    const v4d gv = load(g + i), tv = load(t + i);
    c -= (v4i)(gv != zero) & (v4i)(vabs(gv) < tiny) & (v4i)(tv == zero);  // NaN fails `< tiny`
  }
  return hsumi(c);
}

// Knuth's TwoSum: s + e == a + b exactly.
static inline void two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  const double bp = s - a;
  e = (a - (s - bp)) + (b - bp);
}

// One side's statistics over its finite elements. The sum is compensated (TwoSum per lane, then the
// lanes and their errors added with TwoSum) so that the mean keeps full relative accuracy even when
// the values nearly cancel; then Σ(x−m) and Σ(x−m)² in a second pass (corrected two-pass algorithm
// of Chan, Golub & LeVeque 1983 for M2).
// Both sides' statistics over their finite elements, in one loop so that the two sides' dependency
// chains (each sum is a chain of 3-cycle additions) overlap. The sum is compensated (TwoSum per lane,
// then the lanes and their errors added with TwoSum) so that the mean keeps full relative accuracy
// even when the values nearly cancel; then Σ(x−m) and Σ(x−m)² in a second pass (corrected two-pass
// algorithm of Chan, Golub & LeVeque 1983 for M2).
struct SideAcc {
  v4d s, comp, ss, vmin, vmax;
  v4i fin, zero, tiny;
};

template <bool kFinite>
static inline void side_step(v4d v, SideAcc& a, v4d mn_t) {
  const v4d inf = splat(INFINITY), ninf = splat(-INFINITY);
  const v4d av = vabs(v);
  v4d vm, lo, hi;
  if constexpr (kFinite) {
    vm = lo = hi = v;
  } else {
    const v4i fin = (v4i)(av < inf);
    vm = keep(v, fin);
    lo = fin ? v : inf;
    hi = fin ? v : ninf;
    a.fin -= fin;
  }
  const v4d sn = a.s + vm;
  const v4d bp = sn - a.s;
  a.comp += (a.s - (sn - bp)) + (vm - bp);
  a.s = sn;
  // Σx² of an all-finite block equals the error pass's Σg² / Σt² bit for bit (same lanes, same order
  // of additions), so block_impl copies it from there instead of computing it twice.
  if constexpr (!kFinite) a.ss += vm * vm;
  a.vmin = lo < a.vmin ? lo : a.vmin;
  a.vmax = hi > a.vmax ? hi : a.vmax;
  a.zero -= (v4i)(v == splat(0.0));
  a.tiny -= (v4i)(av < mn_t);  // zeros and subnormals of the target dtype (NaN never counts)
}

template <bool kFinite>
static void side_finish(const SideAcc& a, int64_t n4, const KernelParams& p, SidePartial& out) {
  out.finite = kFinite ? n4 : hsumi(a.fin);
  out.sumsq = kFinite ? 0.0 : hsum(a.ss);  // kFinite: block_impl copies sum_gg / sum_tt
  out.min = hmin(a.vmin);
  out.max = hmax(a.vmax);
  out.zero = hsumi(a.zero);
  out.subnormal = p.min_normal_t > 0 ? hsumi(a.tiny) - out.zero : 0;
  out.pinf = out.ninf = 0;  // counted by the non-finite pass when the block has any
  out.mean = 0;
  out.m2 = 0;
  if (out.finite == 0) return;
  double total = 0, err = 0;
  for (int l = 0; l < 4; ++l) {
    double e1 = 0;
    two_sum(total, a.s[l], total, e1);
    err += e1 + a.comp[l];
  }
  out.mean = (total + err) / static_cast<double>(out.finite);
}

template <bool kFinite>
static inline v4d deviation(v4d v, v4d mean) {
  if constexpr (kFinite) {
    return v - mean;
  } else {
    return keep(v - mean, (v4i)(vabs(v) < splat(INFINITY)));
  }
}

static inline void finish_m2(v4d r1, v4d r2, SidePartial& out) {
  if (out.finite == 0) return;
  const double c1 = hsum(r1), c2 = hsum(r2);
  const double m2 = c2 - c1 * c1 / static_cast<double>(out.finite);
  out.m2 = m2 > 0 ? m2 : 0;
}

template <bool kFinite>
static void side_pass(const double* g, const double* t, int64_t n4, const KernelParams& p, SidePartial& og,
                      SidePartial& ot) {
  const v4d zero = splat(0.0), mn_t = splat(p.min_normal_t);
  SideAcc ag{zero, zero, zero, splat(INFINITY), splat(-INFINITY), splati(0), splati(0), splati(0)};
  SideAcc at = ag;
  for (int64_t i = 0; i < n4; i += 4) {
    side_step<kFinite>(load(g + i), ag, mn_t);
    side_step<kFinite>(load(t + i), at, mn_t);
  }
  side_finish<kFinite>(ag, n4, p, og);
  side_finish<kFinite>(at, n4, p, ot);
  const v4d mg = splat(og.mean), mt = splat(ot.mean);
  v4d g1 = zero, g2 = zero, t1 = zero, t2 = zero;
  for (int64_t i = 0; i < n4; i += 4) {
    const v4d rg = deviation<kFinite>(load(g + i), mg), rt = deviation<kFinite>(load(t + i), mt);
    g1 += rg;
    g2 += rg * rg;
    t1 += rt;
    t2 += rt * rt;
  }
  finish_m2(g1, g2, og);
  finish_m2(t1, t2, ot);
}

// True when every value of g[0..n) and t[0..n) is finite: x − x is NaN exactly for NaN and ±Inf.
static bool all_finite(const double* g, const double* t, int64_t n) {
  v4d acc = splat(0.0);
  for (int64_t i = 0; i < n; i += 4) {
    const v4d gv = load(g + i), tv = load(t + i);
    acc += (gv - gv) + (tv - tv);
  }
  return acc[0] == 0 && acc[1] == 0 && acc[2] == 0 && acc[3] == 0;
}

template <UlpMode kMode>
static void block_impl(const double* g, const double* t, int64_t n, const KernelParams& p, Partial& out) {
  out = Partial{};
  out.elements = n;
  const int64_t n4 = (n + 3) & ~int64_t{3};
  if (n4 == n && all_finite(g, t, n)) {
    error_pass<kMode, true>(g, t, n4, p, out);
    side_pass<true>(g, t, n4, p, out.g, out.t);
    // Every element is compared, so each side's Σx² is the error pass's Σg² / Σt² (identical sums).
    out.g.sumsq = out.sum_gg;
    out.t.sumsq = out.sum_tt;
  } else {
    error_pass<kMode, false>(g, t, n4, p, out);
    side_pass<false>(g, t, n4, p, out.g, out.t);
  }
  if (out.t.zero > 0 && p.ftz_tiny > 0) out.ftz = ftz_pass(g, t, n4, p);
  // The padding lanes are NaN on both sides; they never count as finite, zero or subnormal, and the
  // scalar loop below stops at n.
  if (out.both < n) {
    // Some position holds a non-finite value (rare): count ±Inf per side and check msprobe's rule
    // that the other side holds the same class there.
    for (int64_t i = 0; i < n; ++i) {
      const int cg = nonfinite_class(g[i]), ct = nonfinite_class(t[i]);
      if ((cg | ct) == 0) continue;
      out.g.pinf += cg == 2;
      out.g.ninf += cg == 3;
      out.t.pinf += ct == 2;
      out.t.ninf += ct == 3;
      if (cg != ct) ++out.mismatch;
    }
  }
}

// ---- Fused fast path (issue 13 §0) ----------------------------------------------------------------
// The same arithmetic as block_impl<kPow2> on a block that is "clean" — every value finite and every
// |g|, |t| at or above the target dtype's smallest normal (so no zero, no subnormal, no msprobe ε case,
// no subnormal ULP, no FTZ candidate) — but reading the fp32 / bf16 elements straight from the input
// and widening them in registers (no fp64 block buffers to store and reload), in two loops instead of
// four passes: error sums and side sums; then the deviations from the side means, max |d| with its
// counts, and min / max. Every fp64 lane performs exactly the operations of the general kernel in
// the same order, so the Partial is bit-identical (checked by
// tests/metrics/metrics_test.cpp, FusedKernelMatchesGeneralKernel). A block that turns out not to be
// clean returns false and the caller runs the general kernel on it.
typedef float v8f __attribute__((vector_size(32)));
typedef uint32_t v8w __attribute__((vector_size(32)));
typedef uint16_t v8h __attribute__((vector_size(16)));
typedef float v4f __attribute__((vector_size(16)));

// Eight stored elements as fp32 (exact: bf16 is the top half of an fp32, so bits << 16 reinterpreted
// is its value). kExactRange: see fast_pass.
struct LoadF32 {
  static constexpr double kExactRange = 0x1p19;
  static constexpr int64_t kBytes = 4;
  static inline v8f at(const std::byte* p, int64_t i) {
    v8f f;
    std::memcpy(&f, p + 4 * i, sizeof f);
    return f;
  }
};
struct LoadBF16 {
  static constexpr double kExactRange = 0x1p35;
  static constexpr int64_t kBytes = 2;
  static inline v8f at(const std::byte* p, int64_t i) {
#ifdef PARITY_BLOCK_AVX
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i));
    return (v8f)_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
#else
    v8h h;
    std::memcpy(&h, p + 2 * i, sizeof h);
    return (v8f)(__builtin_convertvector(h, v8w) << 16);
#endif
  }
};

// fp32 → fp64 of elements 0–3 and 4–7 (exact). One vcvtps2pd each on the AVX variants (GCC turns
// __builtin_convertvector into two 2-element conversions and a spill there).
static inline v4d widen_lo(v8f f) {
#ifdef PARITY_BLOCK_AVX
  return (v4d)_mm256_cvtps_pd(_mm256_castps256_ps128((__m256)f));
#else
  return __builtin_convertvector(v4f{f[0], f[1], f[2], f[3]}, v4d);
#endif
}
static inline v4d widen_hi(v8f f) {
#ifdef PARITY_BLOCK_AVX
  return (v4d)_mm256_cvtps_pd(_mm256_extractf128_ps((__m256)f, 1));
#else
  return __builtin_convertvector(v4f{f[4], f[5], f[6], f[7]}, v4d);
#endif
}
// Elements i..i+3 and i+4..i+7 widened to fp64. fp32 on the AVX variants: one vcvtps2pd from memory
// each (no 8-lane load and extract).
template <class L>
static inline void widen8(const std::byte* p, int64_t i, v4d& lo, v4d& hi) {
#ifdef PARITY_BLOCK_AVX
  if constexpr (std::is_same_v<L, LoadF32>) {
    const float* f = reinterpret_cast<const float*>(p) + i;
    lo = (v4d)_mm256_cvtps_pd(_mm_loadu_ps(f));
    hi = (v4d)_mm256_cvtps_pd(_mm_loadu_ps(f + 4));
    return;
  }
#endif
  const v8f x = L::at(p, i);
  lo = widen_lo(x);
  hi = widen_hi(x);
}
// x < m ? x : m and x > m ? x : m — exactly MINPS / MAXPD's rule (the second operand when they compare
// false, NaN included), which GCC does not always see through a mask.
static inline v8f vmin8(v8f x, v8f m) {
#ifdef PARITY_BLOCK_AVX
  return (v8f)_mm256_min_ps((__m256)x, (__m256)m);
#else
  return x < m ? x : m;
#endif
}
static inline v8f vmax8(v8f x, v8f m) {
#ifdef PARITY_BLOCK_AVX
  return (v8f)_mm256_max_ps((__m256)x, (__m256)m);
#else
  return x > m ? x : m;
#endif
}
static inline v4d vmax4(v4d x, v4d m) {
#ifdef PARITY_BLOCK_AVX
  return (v4d)_mm256_max_pd((__m256d)x, (__m256d)m);
#else
  return x > m ? x : m;
#endif
}
static inline v8f vabs8(v8f x) {
  const uint32_t m = 0x7fffffffu;
  const v8w mask = {m, m, m, m, m, m, m, m};
  return (v8f)((v8w)x & mask);
}
static inline v8f splat8(float a) { return v8f{a, a, a, a, a, a, a, a}; }
static inline double hmin8(v8f v) {
  float m = v[0];
  for (int l = 1; l < 8; ++l) m = v[l] < m ? v[l] : m;
  return m;
}
static inline double hmax8(v8f v) {
  float m = v[0];
  for (int l = 1; l < 8; ++l) m = v[l] > m ? v[l] : m;
  return m;
}

// The error metrics' accumulators (error_pass's, same names) and the operations of
// error_pass<kPow2, true> lane for lane, split in two steps over four elements so that each of the
// fast path's two loops keeps its accumulators in registers: err_step (sums, relative and ULP error)
// in the first, abs_step (max |d| and the |d| > 1e-6 / 1e-4 / 1e-2 counts, d recomputed: the same
// subtraction, so the same value) in the second.
// A count of lanes where a < b (false for NaN). On AVX-512 the compare goes to a mask register and its
// population count is added on the integer units, one vector operation instead of two and no vector
// register per counter; elsewhere a vector of per-lane counts. Counts are exact integers either way.
#ifdef PARITY_BLOCK_AVX512
struct Counter {
  int64_t n;
};
static inline Counter counter0() { return Counter{0}; }
static inline void count_lt(Counter& c, v4d a, v4d b) {
  c.n += __builtin_popcount(static_cast<unsigned>(_mm256_cmp_pd_mask((__m256d)a, (__m256d)b, _CMP_LT_OQ)));
}
static inline void count_lt(Counter& c, v8f a, v8f b) {  // eight fp32 lanes (the bf16 kernel)
  c.n += __builtin_popcount(static_cast<unsigned>(_mm256_cmp_ps_mask((__m256)a, (__m256)b, _CMP_LT_OQ)));
}
static inline int64_t total(const Counter& c) { return c.n; }
#else
// Per-lane counts in an integer vector VI: v4i beside fp64 lanes, v8i beside fp32 lanes (Counter8).
template <typename VI>
struct LaneCounter {
  VI v{};
};
template <typename VI, typename VF>
static inline void count_lt(LaneCounter<VI>& c, VF a, VF b) { c.v -= (VI)(a < b); }
using Counter = LaneCounter<v4i>;
static inline Counter counter0() { return Counter{}; }
static inline int64_t total(const Counter& c) { return hsumi(c.v); }
#endif

struct ErrAcc {
  v4d s_d2, s_ad, s_tg, s_gg, s_tt, s_ulp, m_ulp, m_rel;
  Counter c_ulp1, c_r3, c_r53;
};
struct AbsAcc {
  v4d m_ad;
  Counter c_a6, c_a4, c_a2;
};

// acc + a·b where the product a·b is exact (a, b widened from fp32 / bf16: 24 + 24 significand bits fit
// in 53), so a fused multiply-add rounds once, exactly like the separate multiply and add: one
// instruction instead of two on the AVX-512 variant (which requires FMA), the same bits everywhere.
static inline v4d add_exact_product(v4d acc, v4d a, v4d b) {
#ifdef PARITY_BLOCK_FMA
  return (v4d)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)acc);
#else
  return acc + a * b;
#endif
}

static inline void err_step(v4d gm, v4d tm, v4u base, ErrAcc& a) {
  const v4d d = tm - gm;
  const v4d ad = vabs(d), ag = vabs(gm);
  a.s_d2 += d * d;  // d·d is not always exact (fp32 inputs): no FMA here
  a.s_ad += ad;
  a.s_tg = add_exact_product(a.s_tg, gm, tm);
  a.s_gg = add_exact_product(a.s_gg, gm, gm);
  a.s_tt = add_exact_product(a.s_tt, tm, tm);
  const v4d rel = ad / ag;  // g ≠ 0 on a clean block: msprobe's |t − g| / |g|
  count_lt(a.c_r3, rel, splat(1e-3));
  count_lt(a.c_r53, rel, splat(5e-3));
  a.m_rel = vmax4(rel, a.m_rel);
  const v4d ue = ad * (v4d)(base - ((v4u)ag & (v4u)splati(0x7ff0000000000000LL)));  // ulp_error<kPow2>, |g| normal
  a.s_ulp += ue;
  a.m_ulp = vmax4(ue, a.m_ulp);
  count_lt(a.c_ulp1, splat(1.0), ue);
}

static inline void abs_step(v4d gm, v4d tm, AbsAcc& a) {
  const v4d ad = vabs(tm - gm);  // the same subtraction as err_step's: the compiler shares it
  a.m_ad = vmax4(ad, a.m_ad);
  count_lt(a.c_a6, splat(1e-6), ad);
  count_lt(a.c_a4, splat(1e-4), ad);
  count_lt(a.c_a2, splat(1e-2), ad);
}

// Running Σx of one side: TwoSum-compensated as in side_step (kCompensated), or plain.
template <bool kCompensated>
static inline void sum_step(v4d x, v4d& s, v4d& c) {
  if constexpr (kCompensated) {
    const v4d sn = s + x, bp = sn - s;
    c += (s - (sn - bp)) + (x - bp);
    s = sn;
  } else {
    s += x;
  }
}

// The side sums are the general kernel's TwoSum-compensated Σx (kCompensated), or a plain Σx, which is
// the same number when no addition rounds. None rounds when the block's magnitudes span less than
// kExactRange: every x is a multiple of ulp(min|x|) = 2^(e_min − p + 1) (p = 24 for fp32, 8 for bf16)
// and every partial sum, even the 4-lane total of 1024 terms, is below 1024·2^(e_max+1) = 2^(e_max+11);
// with e_max − e_min ≤ 19 (fp32) or 35 (bf16) that is at most 2^53 such ulps, so it is exact. TwoSum's
// error terms are then all zero and the compensated mean equals total / n bit for bit.
// min / max / min|x| are taken on the fp32 values, eight lanes at a time (exact, order-free).
enum class FastResult { kDone, kNeedsCompensation, kNeedsTwoPass, kNotClean };

// Σ(x − mean)² of a clean block from its Σx² (the error pass's Σg² / Σt²) and its mean, in one pass:
// m2 = S2 − mean·(n·mean). With S2's error ≤ 257u·S2 (exact squares, 256-term lane sums and a 4-lane
// tree), the mean's ≤ 2u and three roundings, |error| ≤ 264u·S2. Accepted only where S2 ≤ limit·m2
// (limit 16: the block's mean² is less than 15 times its variance), so the relative error of m2 is
// ≤ 16·264u ≈ 4.7e-13 (docs/metrics.md "Error bounds of the kernel"); otherwise (data far from zero
// mean, near-constant blocks) false, and the caller takes the two-pass deviations. The fp32-sum bf16
// kernel, whose S2 and mean carry δ = 16·2⁻²⁴, asks for limit 2: |error| ≤ 3δ·S2 ≤ 6δ·m2.
static inline bool one_pass_m2(double sumsq, SidePartial& s, double limit = 16.0) {
  const double n = static_cast<double>(s.finite);
  const double m2 = sumsq - s.mean * (n * s.mean);
  if (!(sumsq <= limit * m2)) return false;
  s.m2 = m2;
  return true;
}

// kTwoPass = false (the usual case): one loop over the block for the error sums, max |d| and its counts,
// and the side sums; the std comes from Σx² (one_pass_m2); a second, light loop takes min / max / min|x|
// on the fp32 lanes. kTwoPass = true: the deviations from the side means in the second loop, bit-identical
// to the general kernel (blocks that one_pass_m2 refuses).
// Longer than the 80 lines the rest of the tree keeps to (issue 32), on purpose: the accumulators live in
// vector registers across the whole loop, and a helper per statistic would pass them through memory or
// rely on inlining the compiler does not promise for these target-attributed functions.
template <class Lg, class Lt, bool kCompensated, bool kTwoPass>
static FastResult fast_pass(const std::byte* gp, const std::byte* tp, int64_t n, const KernelParams& p, Partial& out) {
  const v4d zero = splat(0.0);
  const v4u base = {p.ulp_pow2_base, p.ulp_pow2_base, p.ulp_pow2_base, p.ulp_pow2_base};
  ErrAcc e{zero, zero, zero, zero, zero, zero, zero, zero, counter0(), counter0(), counter0()};
  AbsAcc ab{zero, counter0(), counter0(), counter0()};
  v4d gs = zero, gc = zero, ts = zero, tc = zero;
  for (int64_t i = 0; i < n; i += 8) {
    v4d g0, g1, t0, t1;
    widen8<Lg>(gp, i, g0, g1);
    widen8<Lt>(tp, i, t0, t1);
    // 2 KiB ahead, as the bf16 fp32-lane loop: the hardware prefetcher alone leaves this loop waiting on
    // memory (it computes for longer per cache line than a plain read).
    __builtin_prefetch(gp + Lg::kBytes * i + 2048);
    __builtin_prefetch(tp + Lt::kBytes * i + 2048);
    err_step(g0, t0, base, e);
    if constexpr (!kTwoPass) abs_step(g0, t0, ab);
    sum_step<kCompensated>(g0, gs, gc);
    sum_step<kCompensated>(t0, ts, tc);
    err_step(g1, t1, base, e);
    if constexpr (!kTwoPass) abs_step(g1, t1, ab);
    sum_step<kCompensated>(g1, gs, gc);
    sum_step<kCompensated>(t1, ts, tc);
  }
  // A NaN or ±Inf anywhere makes its side's running sum non-finite (fp32/bf16 values cannot overflow
  // an fp64 sum of 1024 terms): not clean.
  for (int l = 0; l < 4; ++l) {
    if (!std::isfinite(gs[l]) || !std::isfinite(ts[l])) return FastResult::kNotClean;
  }
  // Provisional side statistics from these sums; the second loop then takes, on the fp32 values,
  // min / max / min|x| (kept out of the first loop, whose accumulators fill the vector registers), and
  // in the two-pass form the deviations from the means. Only then is it known whether the block is
  // clean and whether the plain sums were exact; if not, everything above is discarded.
  SidePartial sg, st;
  SideAcc ga{gs, gc, zero, zero, zero, splati(0), splati(0), splati(0)};
  SideAcc ta{ts, tc, zero, zero, zero, splati(0), splati(0), splati(0)};
  side_finish<true>(ga, n, p, sg);
  side_finish<true>(ta, n, p, st);
  const v4d mg = splat(sg.mean), mt = splat(st.mean);
  v4d g1 = zero, g2 = zero, t1 = zero, t2 = zero;
  auto dev_step = [&](v4d g, v4d t) {
    abs_step(g, t, ab);
    const v4d rg = g - mg, rt = t - mt;
    g1 += rg;
    g2 += rg * rg;
    t1 += rt;
    t2 += rt * rt;
  };
  v8f gmin = splat8(INFINITY), gmax = splat8(-INFINITY), gamin = gmin, tmin = gmin, tmax = gmax, tamin = gmin;
  for (int64_t i = 0; i < n; i += 8) {
    const v8f g8 = Lg::at(gp, i), t8 = Lt::at(tp, i);
    gmin = vmin8(g8, gmin);
    gmax = vmax8(g8, gmax);
    tmin = vmin8(t8, tmin);
    tmax = vmax8(t8, tmax);
    const v8f ga8 = vabs8(g8), ta8 = vabs8(t8);
    gamin = vmin8(ga8, gamin);
    tamin = vmin8(ta8, tamin);
    if constexpr (kTwoPass) {
      v4d g0, g1w, t0, t1w;
      widen8<Lg>(gp, i, g0, g1w);
      widen8<Lt>(tp, i, t0, t1w);
      dev_step(g0, t0);
      dev_step(g1w, t1w);
    }
  }
  // Clean: no zero or subnormal (in the target dtype) on either side.
  const double g_amin = hmin8(gamin), t_amin = hmin8(tamin);
  if (!(g_amin >= p.min_normal_t) || !(t_amin >= p.min_normal_t)) return FastResult::kNotClean;
  const double g_lo = hmin8(gmin), g_hi = hmax8(gmax), t_lo = hmin8(tmin), t_hi = hmax8(tmax);
  if constexpr (!kCompensated) {
    if (!(fmax_inline(-g_lo, g_hi) < Lg::kExactRange * g_amin) || !(fmax_inline(-t_lo, t_hi) < Lt::kExactRange * t_amin)) {
      return FastResult::kNeedsCompensation;
    }
  }
  const double sum_gg = hsum(e.s_gg), sum_tt = hsum(e.s_tt);
  if constexpr (kTwoPass) {
    finish_m2(g1, g2, sg);
    finish_m2(t1, t2, st);
  } else {
    if (!one_pass_m2(sum_gg, sg) || !one_pass_m2(sum_tt, st)) return FastResult::kNeedsTwoPass;
  }

  out = Partial{};
  out.elements = out.both = n;
  out.sum_d2 = hsum(e.s_d2);
  out.sum_ad = hsum(e.s_ad);
  out.sum_tg = hsum(e.s_tg);
  out.sum_gg = sum_gg;
  out.sum_tt = sum_tt;
  out.sum_ulp = hsum(e.s_ulp);
  out.max_ulp = hmax(e.m_ulp);
  out.ulp_gt1 = total(e.c_ulp1);
  out.rel_lt_1e3 = total(e.c_r3);
  out.rel_lt_5e3 = total(e.c_r53);
  out.abs_gt_1e6 = total(ab.c_a6);
  out.abs_gt_1e4 = total(ab.c_a4);
  out.abs_gt_1e2 = total(ab.c_a2);
  out.max_ad = hmax(ab.m_ad);
  out.max_rel = hmax(e.m_rel);
  out.max_ad_index = out.max_rel_index = -1;
  // side_finish<true>'s min / max are order-free, so the fp32 lanes' extremes stand in for the fp64
  // lanes'; its zero and subnormal counts are 0 on a clean block.
  out.g = sg;
  out.t = st;
  out.g.min = g_lo;
  out.g.max = g_hi;
  out.t.min = t_lo;
  out.t.max = t_hi;
  out.g.sumsq = sum_gg;
  out.t.sumsq = sum_tt;
  return FastResult::kDone;
}

// First with plain sums; a block whose magnitudes span too much for them to be exact is measured again
// with TwoSum, and `compensate` is set so that the caller's next blocks (the rest of a chunk, which
// likely spans as much) take TwoSum directly. A block whose std one_pass_m2 cannot take within its
// bound is measured again in the two-pass form (`two_pass` likewise carried to the next blocks). Every
// field but the sides' m2 is the general kernel's, bit for bit; m2 is within one_pass_m2's bound, or
// bit-identical in the two-pass form. n must be a multiple of 8 (a tail block goes to the general kernel).
template <class Lg, class Lt>
static bool fast_impl(const std::byte* gp, const std::byte* tp, int64_t n, const KernelParams& p, Partial& out,
                      bool& compensate, bool& two_pass) {
  if ((n & 7) != 0 || n == 0) return false;
  if (!two_pass) {
    FastResult r = FastResult::kNeedsCompensation;
    if (!compensate) r = fast_pass<Lg, Lt, false, false>(gp, tp, n, p, out);
    if (r == FastResult::kNeedsCompensation) {
      compensate = true;
      r = fast_pass<Lg, Lt, true, false>(gp, tp, n, p, out);
    }
    if (r != FastResult::kNeedsTwoPass) return r == FastResult::kDone;
    two_pass = true;
  }
  FastResult r = FastResult::kNeedsCompensation;
  if (!compensate) r = fast_pass<Lg, Lt, false, true>(gp, tp, n, p, out);
  if (r == FastResult::kNeedsCompensation) {
    compensate = true;
    r = fast_pass<Lg, Lt, true, true>(gp, tp, n, p, out);
  }
  return r == FastResult::kDone;
}

// fp32 (or mixed fp32 / bf16) pairs: each block starts from plain sums, whatever the chunk's earlier
// blocks needed. Only the speed depends on it (plain sums equal TwoSum's where they are exact): one block
// with a wide range (a value near zero) no longer sends the rest of its chunk to TwoSum, at the price of
// one discarded plain pass per such block. bf16 × bf16 keeps the chunk-wide `compensate`
// (fast_bf16_impl chooses its kernel by it).
template <class Lg, class Lt>
static bool fast_impl_per_block(const std::byte* gp, const std::byte* tp, int64_t n, const KernelParams& p,
                                Partial& out, bool& /*compensate: chunk-wide, not used here*/, bool& two_pass) {
  bool this_block = false;
  return fast_impl<Lg, Lt>(gp, tp, n, p, out, this_block, two_pass);
}

// ---- bf16 × bf16 on fp32 lanes (issue 13 §0) ----------------------------------------------------------
// Both sides bf16 (8 significant bits): t − g is exact in fp32 when the two exponents differ by at most
// 15 (the difference then needs ≤ 15 + 9 bits), and every product g·t, g², t², d² is exact in fp32 / fp64.
// So |d|, max |d| and the |d| > 1e-6 / 1e-4 / 1e-2 counts, the ULP error |d|·2^(7 − e_g) (an exact power
// of two), its maximum and count are computed on eight fp32 lanes, exactly the values of the fp64 kernel;
// the relative error |d|/|g| is one fp32 division, whose counts against 1e-3 / 5e-3 equal the fp64
// kernel's for every bf16 pair (the only quotient of two bf16 values within an fp32 ulp of either
// threshold is 1/200 = 5e-3 itself: tests/metrics/metrics_test.cpp checks every significand pair), and
// whose block maximum is
// the fp32 rounding of the fp64 one (marked max_rel_fp32: compare_tensors replaces it with the fp64
// value for the blocks that can hold the chunk's maximum). The sums take exact terms (widened to fp64)
// on eight fp64 lanes of 128 terms: the same error bound as the fp64 kernel's, a different order.
// Side sums Σx are plain (exact: magnitudes spanning < 2^35, see fast_pass), the std comes from Σx²
// (one_pass_m2). Refused (false: the caller runs fast_impl) where any condition fails: a value not
// finite, |g| or |t| below the smallest normal or |g| < 2^-120 (where 2^(7 − e_g) overflows fp32), an
// exponent gap of 15 or more, magnitudes spanning 2^35, mean² ≥ 15·variance. n a multiple of 16.
typedef int32_t v8i __attribute__((vector_size(32)));

#ifdef PARITY_BLOCK_AVX512
typedef double v8d __attribute__((vector_size(64)));
static inline v8d widen8d(v8f x) {
  return (v8d)_mm512_cvtps_pd((__m256)x);  // one vcvtps2pd (GCC builds the zmm from two halves)
}
static inline v8d add_exact_product8(v8d acc, v8d a, v8d b) {
  return (v8d)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)acc);
}
#else
// Without 512-bit registers GCC keeps a 64-byte vector type in memory (every += a store and reloads
// through general registers: the kernel ran 1.7× slower than the fp64-lane one on AVX2), so here the
// eight fp64 lanes are two 4-lane halves, lanes 0–3 and 4–7: lane for lane the same operations.
struct v8d {
  v4d lo, hi;
  double operator[](int l) const { return l < 4 ? lo[l] : hi[l - 4]; }
};
static inline v8d& operator+=(v8d& a, v8d b) {
  a.lo += b.lo;
  a.hi += b.hi;
  return a;
}
static inline v8d widen8d(v8f x) { return v8d{widen_lo(x), widen_hi(x)}; }
static inline v8d add_exact_product8(v8d acc, v8d a, v8d b) {
  return v8d{add_exact_product(acc.lo, a.lo, b.lo), add_exact_product(acc.hi, a.hi, b.hi)};
}
#endif
static inline double hsum8d(v8d v) { return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])); }
static inline int64_t hsum8i(v8i v) {
  int64_t s = 0;
  for (int l = 0; l < 8; ++l) s += v[l];
  return s;
}
static inline v8i vmaxi8(v8i a, v8i b) { return a > b ? a : b; }
static inline v8i vmini8(v8i a, v8i b) { return a < b ? a : b; }
static inline v8i splat8i(int32_t a) { return v8i{a, a, a, a, a, a, a, a}; }
static inline v8w splat8w(uint32_t a) { return v8w{a, a, a, a, a, a, a, a}; }

// fp32 threshold that makes an fp32 comparison equal to comparing with the fp64 constant: for a float
// x, x > D ⟺ x > RD(D), the largest float ≤ D.
static inline float round_down_f32(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) > d) f = std::nextafter(f, -INFINITY);
  return f;
}

// Counter over eight fp32 lanes (see Counter): on AVX-512 the mask-register Counter itself (count_lt has
// an fp32 overload), elsewhere a vector of eight int32 per-lane counts.
#ifdef PARITY_BLOCK_AVX512
static inline Counter counter8_0() { return counter0(); }
#else
using Counter8 = LaneCounter<v8i>;
static inline Counter8 counter8_0() { return Counter8{}; }
static inline int64_t total(const Counter8& c) { return hsum8i(c.v); }
#endif

// What a bf16 × bf16 fp32-lane kernel (bf16_pass, bf16_pass_fp32_sums) has measured over a block of n
// pairs, reduced to scalars.
struct Bf16Block {
  double sum_g, sum_t, sum_gg, sum_tt, sum_tg, sum_ds, sum_ad, sum_d2, sum_ulp;  // sum_ds: fp32 lanes only
  double g_lo, g_hi, t_lo, t_hi, max_ulp, max_ad, max_rel;  // max_rel: the fp32 rounding (max_rel_fp32)
  int64_t ulp_gt1, rel_lt_1e3, rel_lt_5e3, abs_gt_1e6, abs_gt_1e4, abs_gt_1e2;
  bool gaps_within_4;   // every exponent gap ≤ 4: Partial::max_rel_fp32_distinct
  bool lane_sums_fp32;  // the sums came through fp32 lanes: Partial::lane_sums_fp32
};

// The block's Partial from those scalars: side means Σx/n, the one-pass std (one_pass_m2 with its
// limit), every other field as measured. False where one_pass_m2 refuses the std (out untouched).
static bool bf16_block_partial(const Bf16Block& b, int64_t n, double m2_limit, Partial& out) {
  SidePartial og, ot;
  og.finite = ot.finite = n;
  og.mean = b.sum_g / static_cast<double>(n);
  ot.mean = b.sum_t / static_cast<double>(n);
  og.sumsq = b.sum_gg;
  ot.sumsq = b.sum_tt;
  if (!one_pass_m2(og.sumsq, og, m2_limit) || !one_pass_m2(ot.sumsq, ot, m2_limit)) return false;
  og.min = b.g_lo;
  og.max = b.g_hi;
  ot.min = b.t_lo;
  ot.max = b.t_hi;
  out = Partial{};
  out.elements = out.both = n;
  out.sum_d2 = b.sum_d2;
  out.sum_ad = b.sum_ad;
  out.sum_tg = b.sum_tg;
  out.sum_gg = b.sum_gg;
  out.sum_tt = b.sum_tt;
  out.sum_ds = b.sum_ds;
  out.sum_ulp = b.sum_ulp;
  out.lane_sums_fp32 = b.lane_sums_fp32;
  out.max_ulp = b.max_ulp;
  out.ulp_gt1 = b.ulp_gt1;
  out.rel_lt_1e3 = b.rel_lt_1e3;
  out.rel_lt_5e3 = b.rel_lt_5e3;
  out.abs_gt_1e6 = b.abs_gt_1e6;
  out.abs_gt_1e4 = b.abs_gt_1e4;
  out.abs_gt_1e2 = b.abs_gt_1e2;
  out.max_ad = b.max_ad;
  out.max_rel = b.max_rel;
  out.max_rel_fp32 = true;
  out.max_rel_fp32_distinct = b.gaps_within_4;
  out.max_ad_index = out.max_rel_index = -1;
  out.g = og;
  out.t = ot;
  return true;
}

[[maybe_unused]] static bool bf16_pass(const std::byte* gp, const std::byte* tp, int64_t n, const KernelParams& p, Partial& out) {
  if ((n & 15) != 0 || n == 0) return false;
  const v8d z8{};
  const v8f zf = splat8(0.0f);
  const v8w hi_mask = splat8w(0xffff0000u);
  // Sixteen elements per side and iteration: the even ones are the low halves of the 32-bit words, the
  // odd ones the high halves; both sides are split alike, so the pairs stay together.
  auto for_each8 = [&](auto&& step) {
    for (int64_t i = 0; i < n; i += 16) {
      v8w gw, tw;
      std::memcpy(&gw, gp + 2 * i, sizeof gw);
      std::memcpy(&tw, tp + 2 * i, sizeof tw);
      step((v8f)(gw << 16), (v8f)(tw << 16));
      step((v8f)(gw & hi_mask), (v8f)(tw & hi_mask));
    }
  };
  // First loop: the sums (fp64 lanes), the relative and ULP errors (fp32 lanes).
  v8d s_g = z8, s_t = z8, s_gg = z8, s_tt = z8, s_tg = z8, s_ad = z8, s_d2 = z8, s_ulp = z8;
  v8f m_rel = zf, m_ulp = zf;
  auto c_r3 = counter8_0(), c_r53 = counter8_0(), c_u1 = counter8_0();
  // fl32(q) < fl32(1e-3) (and 5e-3): the fp64 kernel's fl64(q) < 1e-3 for every quotient q of bf16
  // values — the nearest float, not RU: 1/200 = 5e-3 itself is such a quotient (201/200 − 1), counted
  // by neither (Bf16RelativeThresholdsAreExactInFp32 checks every bf16 quotient).
  const v8f r3 = splat8(static_cast<float>(1e-3)), r53 = splat8(static_cast<float>(5e-3)), one = splat8(1.0f);
  // 1/ulp of a bf16 target at |g| with biased exponent E: 2^(134 − E), whose fp32 bits are
  // (261 − E) << 23 (ulp_pow2_base's rule for 8-bit exponents and 7 mantissa bits).
  const v8w base = splat8w(261u << 23), expo = splat8w(0x7f800000u);
  for_each8([&](v8f g, v8f t) {
    const v8f ad = vabs8(t - g), ag = vabs8(g);
    const v8f rel = ad / ag;
    count_lt(c_r3, rel, r3);
    count_lt(c_r53, rel, r53);
    m_rel = vmax8(rel, m_rel);
    const v8f ue = ad * (v8f)(base - ((v8w)ag & expo));
    m_ulp = vmax8(ue, m_ulp);
    count_lt(c_u1, one, ue);
    const v8d gd = widen8d(g), td = widen8d(t), add = widen8d(ad);
    s_g += gd;
    s_t += td;
    s_gg = add_exact_product8(s_gg, gd, gd);
    s_tt = add_exact_product8(s_tt, td, td);
    s_tg = add_exact_product8(s_tg, gd, td);
    s_ad += add;
    s_d2 = add_exact_product8(s_d2, add, add);
    s_ulp += widen8d(ue);
  });
  const double sg = hsum8d(s_g), st = hsum8d(s_t);
  if (!std::isfinite(sg) || !std::isfinite(st)) return false;  // NaN or ±Inf somewhere
  // Second loop: min / max / min |x| per side, the exponent gaps, max |d| and its counts (fp32 lanes).
  v8f gmin = splat8(INFINITY), gmax = splat8(-INFINITY), tmin = gmin, tmax = gmax, gamin = gmin, tamin = gmin, m_ad = zf;
  v8i gapmax = splat8i(INT32_MIN), gapmin = splat8i(INT32_MAX);
  auto c_a6 = counter8_0(), c_a4 = counter8_0(), c_a2 = counter8_0();
  const v8f t6 = splat8(round_down_f32(1e-6)), t4 = splat8(round_down_f32(1e-4)), t2 = splat8(round_down_f32(1e-2));
  for_each8([&](v8f g, v8f t) {
    const v8f ad = vabs8(t - g), ag = vabs8(g), at = vabs8(t);
    // (bits of |t|) − (bits of |g|): less than k·2^23 in magnitude implies exponents at most k apart.
    const v8i gap = (v8i)at - (v8i)ag;
    gapmax = vmaxi8(gap, gapmax);
    gapmin = vmini8(gap, gapmin);
    gmin = vmin8(g, gmin);
    gmax = vmax8(g, gmax);
    tmin = vmin8(t, tmin);
    tmax = vmax8(t, tmax);
    gamin = vmin8(ag, gamin);
    tamin = vmin8(at, tamin);
    m_ad = vmax8(ad, m_ad);
    count_lt(c_a6, t6, ad);
    count_lt(c_a4, t4, ad);
    count_lt(c_a2, t2, ad);
  });
  const double g_amin = hmin8(gamin), t_amin = hmin8(tamin);
  if (!(g_amin >= p.min_normal_t) || !(t_amin >= p.min_normal_t) || !(g_amin >= 0x1p-120)) return false;
  bool gap4 = true;
  for (int l = 0; l < 8; ++l) {
    if (gapmax[l] >= (15 << 23) || gapmin[l] <= -(15 << 23)) return false;
    gap4 = gap4 && gapmax[l] < (4 << 23) && gapmin[l] > -(4 << 23);
  }
  const double g_lo = hmin8(gmin), g_hi = hmax8(gmax), t_lo = hmin8(tmin), t_hi = hmax8(tmax);
  if (!(fmax_inline(-g_lo, g_hi) < LoadBF16::kExactRange * g_amin) ||
      !(fmax_inline(-t_lo, t_hi) < LoadBF16::kExactRange * t_amin)) {
    return false;
  }
  // The exact sums Σg, Σt, rounded once by the division: the general kernel's means.
  const double sum_gg = hsum8d(s_gg), sum_tt = hsum8d(s_tt);
  return bf16_block_partial(Bf16Block{.sum_g = sg, .sum_t = st, .sum_gg = sum_gg, .sum_tt = sum_tt,
                                      .sum_tg = hsum8d(s_tg), .sum_ds = 0, .sum_ad = hsum8d(s_ad),
                                      .sum_d2 = hsum8d(s_d2), .sum_ulp = hsum8d(s_ulp), .g_lo = g_lo, .g_hi = g_hi,
                                      .t_lo = t_lo, .t_hi = t_hi, .max_ulp = hmax8(m_ulp), .max_ad = hmax8(m_ad),
                                      .max_rel = hmax8(m_rel), .ulp_gt1 = total(c_u1), .rel_lt_1e3 = total(c_r3),
                                      .rel_lt_5e3 = total(c_r53), .abs_gt_1e6 = total(c_a6),
                                      .abs_gt_1e4 = total(c_a4), .abs_gt_1e2 = total(c_a2), .gaps_within_4 = gap4,
                                      .lane_sums_fp32 = false},
                            n, 16.0, out);
}


#ifdef PARITY_BLOCK_AVX512
// ---- bf16 × bf16 on sixteen fp32 lanes with fp32 block sums (AVX-512; issue 13 §0) ---------------------
// bf16_pass's elementwise work — d, |d|, relative and ULP errors, their counts and maxima, min / max,
// exponent gaps: exact, the same values — on sixteen fp32 lanes, in one loop (AVX-512's 32 registers
// hold every accumulator), and the sums no longer on fp64 lanes: each fp32 lane adds 16 terms (every
// product exact in fp32, so each FMA rounds once), then the lane goes into an fp64 block total. Each
// sum is then within δ = 16·2⁻²⁴ of Σ|terms| (γ₁₅ in fp32, the fp64 part far below): relative ≤ 1e-6,
// not the fp64 kernels' 1e-14 (docs/metrics.md "Error bounds of the kernel", which derives what that
// means for every metric). The cosine is taken from the difference (Σd² and Σd·(g + t), lane_sums_fp32:
// compare_tensors' finish), so 1 − cos keeps a relative bound. This is what lets bf16 reach the memory
// speed of §0 (docs/benchmarks.md); the fp64-lane bf16_pass stays on the other variants.
// Refused (false: the caller runs fast_impl) as bf16_pass, and also where a magnitude is below 2^-50
// or at or above 2^60 (so no product is subnormal and no fp32 sum can overflow) or mean² ≥ variance
// (one_pass_m2's bound then becomes 6δ relative on m2). n a multiple of 32.
typedef float v16f __attribute__((vector_size(64)));
typedef uint32_t v16w __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

static inline v16f splat16(float a) { return v16f{a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a}; }
static inline v16w splat16w(uint32_t a) { return v16w{a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a}; }
static inline v16f fma16(v16f a, v16f b, v16f acc) { return (v16f)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)acc); }
static inline v16f vmin16(v16f x, v16f m) { return (v16f)_mm512_min_ps((__m512)x, (__m512)m); }  // MINPS's rule
static inline v16f vmax16(v16f x, v16f m) { return (v16f)_mm512_max_ps((__m512)x, (__m512)m); }
static inline void count_lt16(int64_t& c, v16f a, v16f b) {
  c += __builtin_popcount(static_cast<unsigned>(_mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_LT_OQ)));
}
// Sixteen fp32 lanes widened (exactly) and added lane-wise into an fp64 total of eight lanes: lane l of
// the total takes fp32 lanes l and l + 8.
static inline __m512d add_lanes16(__m512d total, v16f x) {
  const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256((__m512)x));
  const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd((__m512)x), 1)));
  return _mm512_add_pd(total, _mm512_add_pd(lo, hi));
}

// The fp32 sums of one 256-pair stretch (indices into s[] and total[]).
enum : int { kSumG, kSumT, kSumGG, kSumTT, kSumTG, kSumDS, kSumAD, kSumD2, kSumUlp, kSums };

// One register-resident loop, like fast_pass, and longer than 80 lines for the same reason.
static bool bf16_pass_fp32_sums(const std::byte* gp, const std::byte* tp, int64_t n, const KernelParams& p, Partial& out) {
  if ((n & 31) != 0 || n == 0) return false;
  const v16f zero = splat16(0.0f), one = splat16(1.0f);
  const v16w hi_mask = splat16w(0xffff0000u), abs_mask = splat16w(0x7fffffffu);
  // Thresholds as in bf16_pass: the relative ones the nearest float, |d|'s rounded down.
  const v16f r3 = splat16(static_cast<float>(1e-3)), r53 = splat16(static_cast<float>(5e-3));
  const v16f t6 = splat16(round_down_f32(1e-6)), t4 = splat16(round_down_f32(1e-4)), t2 = splat16(round_down_f32(1e-2));
  const v16w base = splat16w(261u << 23), expo = splat16w(0x7f800000u);  // 1/ulp of a bf16 target, as bf16_pass
  __m512d total[kSums];
  for (__m512d& t : total) t = _mm512_setzero_pd();
  v16f m_rel = zero, m_ulp = zero, m_ad = zero;
  // One accumulator where one suffices (the 32 registers are all taken): min |x| over both sides, the
  // largest exponent gap in either direction.
  v16f gmin = splat16(INFINITY), gmax = splat16(-INFINITY), tmin = gmin, tmax = gmax, amin = gmin;
  v16i gapmax = (v16i)splat16w(0);
  int64_t c_r3 = 0, c_r53 = 0, c_u1 = 0, c_a6 = 0, c_a4 = 0, c_a2 = 0;
  for (int64_t begin = 0; begin < n; begin += 256) {  // 16 terms per fp32 lane and sum
    v16f s[kSums];
    for (v16f& x : s) x = zero;
    const int64_t end = begin + 256 < n ? begin + 256 : n;
    for (int64_t i = begin; i < end; i += 32) {
      // Thirty-two elements per side: the even ones are the low halves of the 32-bit words, the odd
      // ones the high halves; both sides are split alike, so the pairs stay together.
      v16w gw, tw;
      std::memcpy(&gw, gp + 2 * i, sizeof gw);
      std::memcpy(&tw, tp + 2 * i, sizeof tw);
      // The hardware prefetcher alone leaves this loop waiting on memory (it computes for longer per
      // cache line than a plain read): 2 KiB ahead, measured best of 1–8 KiB.
      __builtin_prefetch(gp + 2 * i + 2048);
      __builtin_prefetch(tp + 2 * i + 2048);
      for (int half = 0; half < 2; ++half) {
        const v16f g = half ? (v16f)(gw & hi_mask) : (v16f)(gw << 16);
        const v16f t = half ? (v16f)(tw & hi_mask) : (v16f)(tw << 16);
        const v16f d = t - g;  // exact: exponents less than 15 apart (checked below)
        const v16f ad = (v16f)((v16w)d & abs_mask), ag = (v16f)((v16w)g & abs_mask), at = (v16f)((v16w)t & abs_mask);
        s[kSumG] += g;
        s[kSumT] += t;
        s[kSumGG] = fma16(g, g, s[kSumGG]);
        s[kSumTT] = fma16(t, t, s[kSumTT]);
        s[kSumTG] = fma16(t, g, s[kSumTG]);
        s[kSumDS] = fma16(d, g + t, s[kSumDS]);  // g + t exact as t − g is
        s[kSumAD] += ad;
        s[kSumD2] = fma16(d, d, s[kSumD2]);
        const v16f rel = ad / ag;
        count_lt16(c_r3, rel, r3);
        count_lt16(c_r53, rel, r53);
        m_rel = vmax16(rel, m_rel);
        const v16f ue = ad * (v16f)(base - ((v16w)ag & expo));
        s[kSumUlp] += ue;
        m_ulp = vmax16(ue, m_ulp);
        count_lt16(c_u1, one, ue);
        m_ad = vmax16(ad, m_ad);
        count_lt16(c_a6, t6, ad);
        count_lt16(c_a4, t4, ad);
        count_lt16(c_a2, t2, ad);
        gmin = vmin16(g, gmin);
        gmax = vmax16(g, gmax);
        tmin = vmin16(t, tmin);
        tmax = vmax16(t, tmax);
        amin = vmin16(ag, vmin16(at, amin));
        const v16i gap = (v16i)_mm512_abs_epi32((__m512i)((v16i)at - (v16i)ag));  // see bf16_pass
        gapmax = gap > gapmax ? gap : gapmax;
      }
    }
    for (int k = 0; k < kSums; ++k) total[k] = add_lanes16(total[k], s[k]);
  }
  double sum[kSums];
  for (int k = 0; k < kSums; ++k) sum[k] = _mm512_reduce_add_pd(total[k]);
  // A NaN anywhere makes Σg or Σt NaN (MINPS / MAXPD may have passed over it); ±Inf fails the range.
  if (!std::isfinite(sum[kSumG]) || !std::isfinite(sum[kSumT])) return false;
  const double a_min = _mm512_reduce_min_ps((__m512)amin);
  const double g_lo = _mm512_reduce_min_ps((__m512)gmin), g_hi = _mm512_reduce_max_ps((__m512)gmax);
  const double t_lo = _mm512_reduce_min_ps((__m512)tmin), t_hi = _mm512_reduce_max_ps((__m512)tmax);
  const double lowest = fmax_inline(p.min_normal_t, 0x1p-50);
  if (!(a_min >= lowest)) return false;
  if (!(fmax_inline(-g_lo, g_hi) < 0x1p60) || !(fmax_inline(-t_lo, t_hi) < 0x1p60)) return false;
  const int32_t widest = _mm512_reduce_max_epi32((__m512i)gapmax);
  if (widest >= (15 << 23)) return false;

  return bf16_block_partial(
      Bf16Block{.sum_g = sum[kSumG], .sum_t = sum[kSumT], .sum_gg = sum[kSumGG], .sum_tt = sum[kSumTT],
                .sum_tg = sum[kSumTG], .sum_ds = sum[kSumDS], .sum_ad = sum[kSumAD], .sum_d2 = sum[kSumD2],
                .sum_ulp = sum[kSumUlp], .g_lo = g_lo, .g_hi = g_hi, .t_lo = t_lo, .t_hi = t_hi,
                .max_ulp = _mm512_reduce_max_ps((__m512)m_ulp), .max_ad = _mm512_reduce_max_ps((__m512)m_ad),
                .max_rel = _mm512_reduce_max_ps((__m512)m_rel), .ulp_gt1 = c_u1, .rel_lt_1e3 = c_r3,
                .rel_lt_5e3 = c_r53, .abs_gt_1e6 = c_a6, .abs_gt_1e4 = c_a4, .abs_gt_1e2 = c_a2,
                .gaps_within_4 = widest < (4 << 23), .lane_sums_fp32 = true},
      n, 2.0, out);
}
#endif

// The bf16 × bf16 fp32-lane kernel of this variant: with fp32-lane sums where AVX-512 has the registers.
#ifdef PARITY_BLOCK_AVX512
static constexpr auto bf16_lane_kernel = &bf16_pass_fp32_sums;
#else
static constexpr auto bf16_lane_kernel = &bf16_pass;
#endif

// The fp32-lane kernels compute the ULP error of a bf16 target only (2^(7 − e_g), kPow2).
static bool bf16_target_ulp(const KernelParams& p) {
  return p.ulp_mode == UlpMode::kPow2 && p.ulp_pow2_base == (uint64_t{2046 + 7} << 52);
}

// bf16 golden and target: the fp32-lane kernel above, or fast_impl for the blocks it refuses (and for
// the rest of a chunk once a block needed TwoSum or the two-pass std).
static bool fast_bf16_impl(const std::byte* gp, const std::byte* tp, int64_t n, const KernelParams& p, Partial& out,
                           bool& compensate, bool& two_pass) {
  if (!compensate && !two_pass && bf16_target_ulp(p) && bf16_lane_kernel(gp, tp, n, p, out)) {
    return true;
  }
  return fast_impl<LoadBF16, LoadBF16>(gp, tp, n, p, out, compensate, two_pass);
}

#ifdef PARITY_BLOCK_AVX512
// A span of bf16 × bf16 pairs in one call of the fp32-lane kernel (SpanFn): a quarter of the calls, and
// of their per-call reductions and Partials, for the same bounds (measured: the kernel 16 % faster on
// spans of four blocks than on single blocks).
static bool bf16_span(const std::byte* gp, const std::byte* tp, int64_t n, const KernelParams& p, Partial& out) {
  return bf16_target_ulp(p) && bf16_pass_fp32_sums(gp, tp, n, p, out);
}
static SpanFn span_entry(DType g, DType t) { return g == DType::kBF16 && t == DType::kBF16 ? &bf16_span : nullptr; }
#endif

// The fused kernel for a (golden, target) dtype pair, or nullptr: fp32 and bf16 on either side
// (targets of those dtypes always take the kPow2 ULP path).
static FastFn fast_entry(DType g, DType t) {
  const bool gf = g == DType::kF32, gb = g == DType::kBF16, tf = t == DType::kF32, tb = t == DType::kBF16;
  if (gf && tf) return &fast_impl_per_block<LoadF32, LoadF32>;
  if (gf && tb) return &fast_impl_per_block<LoadF32, LoadBF16>;
  if (gb && tf) return &fast_impl_per_block<LoadBF16, LoadF32>;
  if (gb && tb) return &fast_bf16_impl;
  return nullptr;
}

// Widening of contiguous native-order fp32 / bf16 / fp64 elements into fp64, compiled with this
// variant's instruction set (the generic decode_to_double is built for the baseline ISA). Exact.
static bool decode_entry(DType dt, const std::byte* p, int64_t n, double* out) {
  switch (dt) {
    case DType::kF32:
      for (int64_t i = 0; i < n; ++i) {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        out[i] = static_cast<double>(f);
      }
      return true;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        const uint32_t w = static_cast<uint32_t>(h) << 16;
        float f;
        std::memcpy(&f, &w, 4);
        out[i] = static_cast<double>(f);
      }
      return true;
    case DType::kF64:
      std::memcpy(out, p, static_cast<size_t>(n) * 8);
      return true;
    default:
      return false;
  }
}

static void block_entry(const double* g, const double* t, int64_t n, const KernelParams& p, Partial& out) {
  switch (p.ulp_mode) {
    case UlpMode::kPow2: block_impl<UlpMode::kPow2>(g, t, n, p, out); return;
    case UlpMode::kDivide: block_impl<UlpMode::kDivide>(g, t, n, p, out); return;
    case UlpMode::kOne: block_impl<UlpMode::kOne>(g, t, n, p, out); return;
  }
}

}  // namespace parity::metrics_detail::PARITY_BLOCK_NS
