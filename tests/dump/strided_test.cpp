// Statistics and bytes of strided tensors (src/dump/strided.cpp): a transpose, a slice, a broadcast and a
// size-1 dimension give the same statistics, bit for bit, and the same bytes as the C-contiguous copy the
// framework's contiguous() would make.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "../core/same_stats.h"
#include "parity/dump.h"

using namespace parity;

namespace {

// The elements of a strided view of `base` in logical order: the reference gather, one index at a time.
template <typename T>
std::vector<T> reference_gather(const T* first, const std::vector<int64_t>& shape, const std::vector<int64_t>& stride) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<T> out;
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, offset = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      offset += (rest % shape[d]) * stride[d];
      rest /= shape[d];
    }
    out.push_back(first[offset]);
  }
  return out;
}


struct View {
  const char* what;
  int64_t offset;
  std::vector<int64_t> shape, stride;
};

// Views of a [4, 6, 130, 70] buffer (over two 64 Ki-element chunks, so chunk order matters too).
std::vector<View> views() {
  const std::vector<int64_t> c = {6 * 130 * 70, 130 * 70, 70, 1};
  return {
      {"transpose(1, 2)", 0, {4, 130, 6, 70}, {c[0], c[2], c[1], c[3]}},
      {"transpose(2, 3)", 0, {4, 6, 70, 130}, {c[0], c[1], c[3], c[2]}},
      {"slice [:, 1:5, :, 3:67]", c[1] + 3, {4, 4, 130, 64}, {c[0], c[1], c[2], c[3]}},
      {"every second row", 0, {4, 6, 65, 70}, {c[0], c[1], 2 * c[2], c[3]}},
      {"broadcast [4, 1, 130, 70] -> [4, 6, 130, 70]", 0, {4, 6, 130, 70}, {c[0], 0, c[2], c[3]}},
      {"size-1 dimensions", 0, {1, 4, 1, 130}, {7, c[0], 3, c[2]}},
      {"contiguous", 0, {4, 6, 130, 70}, c},
  };
}

TEST(StridedStats, EqualTheContiguousCopysBitForBit) {
  std::vector<float> base(4 * 6 * 130 * 70);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 3.f);
  for (float& v : base) v = normal(rng);
  base[123] = std::numeric_limits<float>::quiet_NaN();
  base[70 * 5 + 2] = std::numeric_limits<float>::infinity();
  base[999] = 0.f;
  for (const View& v : views()) {
    SCOPED_TRACE(v.what);
    const float* first = base.data() + v.offset;
    const std::vector<float> want = reference_gather(first, v.shape, v.stride);
    std::vector<float> got(want.size());
    dump::gather_contiguous(DType::kF32, first, v.shape, v.stride, got.data());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)));
    test::expect_same_stats_bits(dump::fused_stats_strided(DType::kF32, first, v.shape, v.stride),
                     dump::fused_stats(DType::kF32, want.data(), static_cast<int64_t>(want.size())));
  }
}

TEST(StridedStats, TwoByteAndEightByteElements) {
  std::vector<uint16_t> half(30 * 50);
  for (size_t i = 0; i < half.size(); ++i) half[i] = static_cast<uint16_t>(0x3C00 + (i * 37) % 900);  // bf16 / f16 bits
  std::vector<int64_t> ints(30 * 50);
  for (size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<int64_t>(i * 7919 % 1000) - 500;
  const std::vector<int64_t> shape = {50, 30}, stride = {1, 50};  // a transposed [30, 50]
  for (DType dt : {DType::kBF16, DType::kF16}) {
    const auto want = reference_gather(half.data(), shape, stride);
    test::expect_same_stats_bits(dump::fused_stats_strided(dt, half.data(), shape, stride),
                     dump::fused_stats(dt, want.data(), static_cast<int64_t>(want.size())));
  }
  const auto want = reference_gather(ints.data(), shape, stride);
  test::expect_same_stats_bits(dump::fused_stats_strided(DType::kI64, ints.data(), shape, stride),
                   dump::fused_stats(DType::kI64, want.data(), static_cast<int64_t>(want.size())));
}

TEST(StridedStats, EmptyAndSingleElement) {
  const float one = 2.5f;
  const TensorStats s = dump::fused_stats_strided(DType::kF32, &one, {1, 1}, {5, 9});
  EXPECT_EQ(s.numel, 1);
  EXPECT_EQ(s.max, 2.5);
  const TensorStats e = dump::fused_stats_strided(DType::kF32, &one, {3, 0}, {1, 3});
  EXPECT_EQ(e.numel, 0);
}

}  // namespace
