// stats_simd_x86.cpp — AVX2 kernel of the fused capture statistics for F32, BF16 and F16.
//
// Same lanes, same association order as lanes_scalar (stats_lanes.h), so the two agree bit for bit;
// about 8x faster than the portable loop, which GCC does not vectorise (the NaN/Inf exclusions are
// selects it will not if-convert across the mixed float/double/int reductions). Built for every
// x86-64 machine and chosen at run time (cpuid), so the binary still runs on CPUs without AVX2.
//
// Per 8 elements, with b the fp32 bit pattern (bf16: the 16 bits shifted up; f16: F16C conversion,
// exact for every finite value and subnormal):
//   nonfinite = (b & exp) == exp; NaN adds nonfinite & mantissa != 0, Inf nonfinite & mantissa == 0
//   v = nonfinite ? 0 : b;  min/max take +inf/-inf in place of a non-finite element
//   sum += (double)v;  sq += (double)v * (double)v   (lanes 0-3 low half, 4-7 high half)
#include "dump/stats_lanes.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

#include <cstdlib>

namespace parity::dump::detail {
namespace {

#define PARITY_AVX2 __attribute__((target("avx2,f16c"), always_inline)) inline

enum class Src { kF32, kBF16, kF16 };

// The fp32 bits of elements i..i+7, and (f16 only) the subnormal mask judged on the f16 bits.
template <Src S>
PARITY_AVX2 __m256i load8(const void* data, int64_t i, __m256i* sub_mask) {
  const __m256i zero = _mm256_setzero_si256();
  if constexpr (S == Src::kF32) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint32_t*>(data) + i));
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(data) + i));
    if constexpr (S == Src::kBF16) {
      return _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
    } else {
      const __m256i w = _mm256_cvtepu16_epi32(h);
      const __m256i e = _mm256_and_si256(w, _mm256_set1_epi32(0x7C00));
      const __m256i m = _mm256_and_si256(w, _mm256_set1_epi32(0x03FF));
      *sub_mask = _mm256_andnot_si256(_mm256_cmpeq_epi32(m, zero), _mm256_cmpeq_epi32(e, zero));
      return _mm256_castps_si256(_mm256_cvtph_ps(h));
    }
  }
}

template <Src S>
__attribute__((target("avx2,f16c"))) int64_t run(const void* data, int64_t n, Lanes& a) {
  const int64_t n8 = n - n % kLanes;
  const __m256i kExp = _mm256_set1_epi32(0x7F800000), kMan = _mm256_set1_epi32(0x007FFFFF);
  const __m256i kAbs = _mm256_set1_epi32(0x7FFFFFFF), zero = _mm256_setzero_si256();
  const __m256 pinf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256i nan = zero, inf = zero, zer = zero, sub = zero;  // counts, as 0 - (number of -1 masks)
  __m256 mn = _mm256_loadu_ps(a.mn), mx = _mm256_loadu_ps(a.mx), amax = _mm256_loadu_ps(a.amax);
  __m256d sum_lo = _mm256_loadu_pd(a.sum), sum_hi = _mm256_loadu_pd(a.sum + 4);
  __m256d sq_lo = _mm256_loadu_pd(a.sq), sq_hi = _mm256_loadu_pd(a.sq + 4);
  for (int64_t i = 0; i < n8; i += kLanes) {
    __m256i sub_mask = zero;
    const __m256i b = load8<S>(data, i, &sub_mask);
    const __m256i e = _mm256_and_si256(b, kExp);
    const __m256i man_zero = _mm256_cmpeq_epi32(_mm256_and_si256(b, kMan), zero);
    const __m256i nonfin = _mm256_cmpeq_epi32(e, kExp);
    nan = _mm256_sub_epi32(nan, _mm256_andnot_si256(man_zero, nonfin));
    inf = _mm256_sub_epi32(inf, _mm256_and_si256(nonfin, man_zero));
    zer = _mm256_sub_epi32(zer, _mm256_cmpeq_epi32(_mm256_and_si256(b, kAbs), zero));
    if constexpr (S != Src::kF16) sub_mask = _mm256_andnot_si256(man_zero, _mm256_cmpeq_epi32(e, zero));
    sub = _mm256_sub_epi32(sub, sub_mask);
    const __m256 v = _mm256_castsi256_ps(_mm256_andnot_si256(nonfin, b));
    const __m256 fin_mask = _mm256_castsi256_ps(nonfin);
    mn = _mm256_min_ps(_mm256_blendv_ps(v, pinf, fin_mask), mn);
    mx = _mm256_max_ps(_mm256_blendv_ps(v, ninf, fin_mask), mx);
    amax = _mm256_max_ps(_mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(v), kAbs)), amax);
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    sum_lo = _mm256_add_pd(sum_lo, lo);
    sum_hi = _mm256_add_pd(sum_hi, hi);
    sq_lo = _mm256_add_pd(sq_lo, _mm256_mul_pd(lo, lo));
    sq_hi = _mm256_add_pd(sq_hi, _mm256_mul_pd(hi, hi));
  }
  _mm256_storeu_ps(a.mn, mn);
  _mm256_storeu_ps(a.mx, mx);
  _mm256_storeu_ps(a.amax, amax);
  _mm256_storeu_pd(a.sum, sum_lo);
  _mm256_storeu_pd(a.sum + 4, sum_hi);
  _mm256_storeu_pd(a.sq, sq_lo);
  _mm256_storeu_pd(a.sq + 4, sq_hi);
  int32_t c[4][kLanes];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(c[0]), nan);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(c[1]), inf);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(c[2]), zer);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(c[3]), sub);
  for (int j = 0; j < kLanes; ++j) {  // a lane counts at most n/8 < 2^31 elements of one chunk
    a.nan += c[0][j];
    a.inf += c[1][j];
    a.zero += c[2][j];
    a.sub += c[3][j];
  }
  return n8;
}

#undef PARITY_AVX2

// ---- AVX-512F: two chunks per 512-bit register ------------------------------------------------------
// The same steps as run<S> on 16 elements: elements i..i+7 of chunk a in the low half, of chunk b in the
// high half. Masks replace the AVX2 compare vectors; the float and double operations, and their operand
// order (min/max keep the accumulator as the second operand, as _mm256_min_ps does), are those of run<S>.
#define PARITY_AVX512 __attribute__((target("avx512f"), always_inline)) inline

template <Src S>
PARITY_AVX512 __m512i load16(const void* a, const void* b, int64_t i, __mmask16* sub_mask) {
  if constexpr (S == Src::kF32) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint32_t*>(a) + i));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint32_t*>(b) + i));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  } else {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(a) + i));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(b) + i));
    const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    if constexpr (S == Src::kBF16) {
      return _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
    } else {
      const __m512i w = _mm512_cvtepu16_epi32(h);
      const __m512i zero = _mm512_setzero_si512();
      *sub_mask = _mm512_cmpeq_epi32_mask(_mm512_and_si512(w, _mm512_set1_epi32(0x7C00)), zero) &
                  _mm512_cmpneq_epi32_mask(_mm512_and_si512(w, _mm512_set1_epi32(0x03FF)), zero);
      return _mm512_castps_si512(_mm512_cvtph_ps(h));
    }
  }
}

// Loads / stores one float field of two Lanes as one register (a's 8 lanes low, b's high).
PARITY_AVX512 __m512 load_pair(const float* a, const float* b) {
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(a))),
                                             _mm256_castps_pd(_mm256_loadu_ps(b)), 1));
}
PARITY_AVX512 void store_pair(__m512 v, float* a, float* b) {
  _mm256_storeu_ps(a, _mm512_castps512_ps256(v));
  _mm256_storeu_ps(b, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

template <Src S>
__attribute__((target("avx512f"))) int64_t run_pair(const void* pa, const void* pb, int64_t n, Lanes& la, Lanes& lb) {
  const int64_t n8 = n - n % kLanes;
  const __m512i kExp = _mm512_set1_epi32(0x7F800000), kMan = _mm512_set1_epi32(0x007FFFFF);
  const __m512i kAbs = _mm512_set1_epi32(0x7FFFFFFF), zero = _mm512_setzero_si512(), one = _mm512_set1_epi32(1);
  const __m512 pinf = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512i nan = zero, inf = zero, zer = zero, sub = zero;
  __m512 mn = load_pair(la.mn, lb.mn), mx = load_pair(la.mx, lb.mx), amax = load_pair(la.amax, lb.amax);
  __m512d sum_a = _mm512_loadu_pd(la.sum), sum_b = _mm512_loadu_pd(lb.sum);
  __m512d sq_a = _mm512_loadu_pd(la.sq), sq_b = _mm512_loadu_pd(lb.sq);
  for (int64_t i = 0; i < n8; i += kLanes) {
    __mmask16 sub_mask = 0;
    const __m512i b = load16<S>(pa, pb, i, &sub_mask);
    const __m512i e = _mm512_and_si512(b, kExp);
    const __mmask16 man_zero = _mm512_cmpeq_epi32_mask(_mm512_and_si512(b, kMan), zero);
    const __mmask16 nonfin = _mm512_cmpeq_epi32_mask(e, kExp);
    nan = _mm512_mask_add_epi32(nan, nonfin & static_cast<__mmask16>(~man_zero), nan, one);
    inf = _mm512_mask_add_epi32(inf, nonfin & man_zero, inf, one);
    zer = _mm512_mask_add_epi32(zer, _mm512_cmpeq_epi32_mask(_mm512_and_si512(b, kAbs), zero), zer, one);
    if constexpr (S != Src::kF16) sub_mask = _mm512_cmpeq_epi32_mask(e, zero) & static_cast<__mmask16>(~man_zero);
    sub = _mm512_mask_add_epi32(sub, sub_mask, sub, one);
    const __m512 v = _mm512_castsi512_ps(_mm512_maskz_mov_epi32(static_cast<__mmask16>(~nonfin), b));
    mn = _mm512_min_ps(_mm512_mask_blend_ps(nonfin, v, pinf), mn);
    mx = _mm512_max_ps(_mm512_mask_blend_ps(nonfin, v, ninf), mx);
    amax = _mm512_max_ps(_mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), kAbs)), amax);
    const __m512d da = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d db = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    sum_a = _mm512_add_pd(sum_a, da);
    sum_b = _mm512_add_pd(sum_b, db);
    sq_a = _mm512_add_pd(sq_a, _mm512_mul_pd(da, da));
    sq_b = _mm512_add_pd(sq_b, _mm512_mul_pd(db, db));
  }
  store_pair(mn, la.mn, lb.mn);
  store_pair(mx, la.mx, lb.mx);
  store_pair(amax, la.amax, lb.amax);
  _mm512_storeu_pd(la.sum, sum_a);
  _mm512_storeu_pd(lb.sum, sum_b);
  _mm512_storeu_pd(la.sq, sq_a);
  _mm512_storeu_pd(lb.sq, sq_b);
  int32_t c[4][2 * kLanes];
  _mm512_storeu_si512(c[0], nan);
  _mm512_storeu_si512(c[1], inf);
  _mm512_storeu_si512(c[2], zer);
  _mm512_storeu_si512(c[3], sub);
  for (int j = 0; j < kLanes; ++j) {
    la.nan += c[0][j]; la.inf += c[1][j]; la.zero += c[2][j]; la.sub += c[3][j];
    lb.nan += c[0][kLanes + j]; lb.inf += c[1][kLanes + j]; lb.zero += c[2][kLanes + j]; lb.sub += c[3][kLanes + j];
  }
  return n8;
}

#undef PARITY_AVX512

}  // namespace

// clang does not know "f16c" as a __builtin_cpu_supports feature (clang 14: "invalid cpu feature
// string"), so F16C is read from CPUID leaf 1 (ECX bit 29). The AVX2 check also covers the OS side
// (XSAVE of the YMM state), which F16C's VEX-encoded instructions need as well.
static bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

bool lanes_simd_available() {
  static const bool ok = __builtin_cpu_supports("avx2") && has_f16c();
  return ok;
}

int64_t lanes_simd(DType dtype, const void* data, int64_t n, Lanes& a) {
  if (!lanes_simd_available()) return 0;
  switch (dtype) {
    case DType::kF32: return run<Src::kF32>(data, n, a);
    case DType::kBF16: return run<Src::kBF16>(data, n, a);
    case DType::kF16: return run<Src::kF16>(data, n, a);
    default: return 0;
  }
}

// The paired kernel also needs the one-chunk kernel's F16C (the AVX2 check covers the OS's YMM state;
// __builtin_cpu_supports("avx512f") that of the ZMM and mask registers). PARITY_STATS_AVX512=0 turns it
// off (the tests compare both paths).
static bool pair_enabled() {
  const char* env = std::getenv("PARITY_STATS_AVX512");
  return !(env && env[0] == '0');
}

int64_t lanes_simd_pair(DType dtype, const void* a, const void* b, int64_t n, Lanes& la, Lanes& lb) {
  static const bool ok = lanes_simd_available() && __builtin_cpu_supports("avx512f") && pair_enabled();
  if (!ok) return 0;
  switch (dtype) {
    case DType::kF32: return run_pair<Src::kF32>(a, b, n, la, lb);
    case DType::kBF16: return run_pair<Src::kBF16>(a, b, n, la, lb);
    case DType::kF16: return run_pair<Src::kF16>(a, b, n, la, lb);
    default: return 0;
  }
}

}  // namespace parity::dump::detail

#else  // not x86-64: the portable lanes only

namespace parity::dump::detail {
bool lanes_simd_available() { return false; }
int64_t lanes_simd(DType, const void*, int64_t, Lanes&) { return 0; }
int64_t lanes_simd_pair(DType, const void*, const void*, int64_t, Lanes&, Lanes&) { return 0; }
}  // namespace parity::dump::detail

#endif
