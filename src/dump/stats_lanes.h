// stats_lanes.h — the per-element definition of the fused capture statistics, organised in 8 lanes.
//
// Element i of a chunk is accumulated into lane i % 8 (sums, sums of squares, min, max, absmax); the
// lanes are folded in lane order at the end of the chunk. This fixed association order is what lets
// the SIMD kernel (stats_simd_x86.cpp: 8 float lanes = 2 x 4 double lanes) and this portable reference
// give bit-identical results, so a statistic never depends on which CPU computed it.
//   sum  = sum_lanes( sum_{i = j mod 8} v_i )      (fp64; a float squared is exact in fp64, so
//   sq   = sum_lanes( sum_{i = j mod 8} v_i^2 )     v*v then + equals fma(v, v, acc) bit for bit)
//   min/max/absmax over finite elements; NaN/Inf counted, never summed.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "parity/dtype.h"

namespace parity::dump::detail {

inline constexpr int kLanes = 8;

struct Lanes {
  double sum[kLanes] = {}, sq[kLanes] = {};
  float mn[kLanes], mx[kLanes], amax[kLanes];
  int64_t nan = 0, inf = 0, zero = 0, sub = 0;
  Lanes() {
    for (int j = 0; j < kLanes; ++j) {
      mn[j] = std::numeric_limits<float>::infinity();
      mx[j] = -std::numeric_limits<float>::infinity();
      amax[j] = 0.0f;
    }
  }
};

// Bit-pattern classification of the three float formats the lanes handle (the others go through the
// generic per-element path in stats.cpp). cls: 0 finite, 1 NaN, 2 Inf; sub: nonzero with an all-zero
// exponent field, judged in the element's own format.
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
  static float value(Raw b) {  // IEEE binary16 -> binary32, exact (finite inputs only: cls filters)
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

// The reference: elements [begin, end) of `p`, element i into lane i % 8. `begin` may be any index;
// the SIMD kernel hands over its tail here with begin a multiple of 8.
template <typename Tr>
void lanes_scalar(const typename Tr::Raw* p, int64_t begin, int64_t end, Lanes& a) {
  for (int64_t i = begin; i < end; ++i) {
    const int j = static_cast<int>(i % kLanes);
    const auto b = p[i];
    const int c = Tr::cls(b);
    const bool fin = c == 0;
    const float v = fin ? Tr::value(b) : 0.0f;
    a.nan += c == 1;
    a.inf += c == 2;
    a.sub += Tr::sub(b);
    a.zero += fin && v == 0.0f;
    if (fin && v < a.mn[j]) a.mn[j] = v;
    if (fin && v > a.mx[j]) a.mx[j] = v;
    const float av = std::fabs(v);
    if (av > a.amax[j]) a.amax[j] = av;
    const double d = v;
    a.sum[j] += d;
    a.sq[j] += d * d;
  }
}

// SIMD kernel for F32 / BF16 / F16 when the CPU has one (x86-64 with AVX2 and F16C): accumulates the
// first n - n % 8 elements into `a` exactly as lanes_scalar would and returns how many it took; 0 when
// no SIMD kernel applies (other dtype or CPU), leaving everything to lanes_scalar.
int64_t lanes_simd(DType dtype, const void* data, int64_t n, Lanes& a);
bool lanes_simd_available();

// Two chunks at once (x86-64 with AVX-512F): the first n - n % 8 elements of chunk `a` and of chunk `b`
// (both n long) accumulated into `la` and `lb` exactly as lanes_simd would, one chunk's 8 lanes in each
// half of a 512-bit register — each chunk keeps its own lanes and association order, so the bits are
// those of the one-chunk kernels, with half the instructions per element. 0 when it does not apply.
int64_t lanes_simd_pair(DType dtype, const void* a, const void* b, int64_t n, Lanes& la, Lanes& lb);

}  // namespace parity::dump::detail
