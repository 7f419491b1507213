// Independent reference definitions for tests/numeric: written from the format parameters alone
// (field extraction + ldexp, and nearest-value search over the sorted list of all values), sharing no
// code with src/numeric.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace parity_test {

struct RefFormat {
  int e, m;
  bool fn;  // e4m3fn: no inf, only S.1..1.1..1 is NaN
  int bias() const { return (1 << (e - 1)) - 1; }
  int width() const { return 1 + e + m; }
};

inline constexpr RefFormat kRefF16{5, 10, false};
inline constexpr RefFormat kRefBF16{8, 7, false};
inline constexpr RefFormat kRefE4M3{4, 3, true};
inline constexpr RefFormat kRefE5M2{5, 2, false};

// Value of a bit pattern straight from the textbook formula (-1)^s * 2^(E-bias) * 1.M, or
// (-1)^s * 2^(1-bias) * 0.M for E = 0.
inline double ref_decode(const RefFormat& f, uint32_t bits) {
  const uint32_t s = (bits >> (f.e + f.m)) & 1u;
  const uint32_t E = (bits >> f.m) & ((1u << f.e) - 1);
  const uint32_t M = bits & ((1u << f.m) - 1);
  const double sign = s ? -1.0 : 1.0;
  const uint32_t Emax = (1u << f.e) - 1;
  if (!f.fn && E == Emax) return M == 0 ? sign * std::numeric_limits<double>::infinity()
                                        : std::numeric_limits<double>::quiet_NaN();
  if (f.fn && E == Emax && M == (1u << f.m) - 1) return std::numeric_limits<double>::quiet_NaN();
  if (E == 0) return sign * std::ldexp(static_cast<double>(M), 1 - f.bias() - f.m);
  return sign * std::ldexp(static_cast<double>(M + (1u << f.m)), static_cast<int>(E) - f.bias() - f.m);
}

// All non-negative finite values in pattern order (pattern k has value table[k]; values increase with
// k), plus one extra entry: the value the next pattern would have with an unbounded exponent. A
// rounding that lands there is an overflow.
inline std::vector<double> ref_positive_values(const RefFormat& f) {
  std::vector<double> v;
  for (uint32_t k = 0; k < (1u << (f.e + f.m)); ++k) {
    const double d = ref_decode(f, k);
    if (!std::isfinite(d)) break;
    v.push_back(d);
  }
  const double last = v.back(), prev = v[v.size() - 2];
  v.push_back(last + (last - prev));  // same binade spacing as the top binade
  return v;
}

// Reference round-to-nearest-even: binary search the sorted values, pick the nearer neighbour, on an
// exact tie the even pattern. Returns the pattern, or -1 for overflow (caller maps to inf / NaN).
inline int64_t ref_round_index(const std::vector<double>& values, double a) {
  auto it = std::lower_bound(values.begin(), values.end(), a);
  if (it == values.end()) return -1;
  int64_t hi = it - values.begin();
  if (values[hi] == a) return hi == static_cast<int64_t>(values.size()) - 1 ? -1 : hi;
  const int64_t lo = hi - 1;  // a > 0 = values[0], so lo >= 0
  const double dlo = a - values[lo], dhi = values[hi] - a;
  int64_t k = dlo < dhi ? lo : (dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi));
  if (k == static_cast<int64_t>(values.size()) - 1) return -1;
  return k;
}

}  // namespace parity_test
