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

}  // namespace parity::dump::detail

#else  // not x86-64: the portable lanes only

namespace parity::dump::detail {
bool lanes_simd_available() { return false; }
int64_t lanes_simd(DType, const void*, int64_t, Lanes&) { return 0; }
}  // namespace parity::dump::detail

#endif
