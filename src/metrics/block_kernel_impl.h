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

#include "metrics/block_kernel.h"
#include "parity/dtype.h"

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
