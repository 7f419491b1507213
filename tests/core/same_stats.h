// tests/core/same_stats.h — two TensorStats hold the same bits, field by field (NaN equal to NaN, +0 unlike
// −0): what a test of two paths that must compute identical statistics (a SIMD lane layout, a strided read,
// a threaded kernel) checks.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <utility>

#include "parity/tensor.h"

namespace parity::test {

inline bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

inline void expect_same_stats_bits(const TensorStats& a, const TensorStats& b) {
  for (auto [x, y] : {std::pair{a.min, b.min}, {a.max, b.max}, {a.mean, b.mean}, {a.l2norm, b.l2norm},
                      {a.std, b.std}, {a.absmax, b.absmax}}) {
    EXPECT_TRUE(same_bits(x, y)) << x << " vs " << y;
  }
  EXPECT_EQ(a.numel, b.numel);
  EXPECT_EQ(a.nan_count, b.nan_count);
  EXPECT_EQ(a.inf_count, b.inf_count);
  EXPECT_EQ(a.pinf_count, b.pinf_count);
  EXPECT_EQ(a.ninf_count, b.ninf_count);
  EXPECT_EQ(a.zero_count, b.zero_count);
  EXPECT_EQ(a.subnormal_count, b.subnormal_count);
}

}  // namespace parity::test
