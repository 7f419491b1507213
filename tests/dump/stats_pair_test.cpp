// The AVX-512 kernel that summarises two chunks at once (src/dump/stats_simd_x86.cpp, lanes_simd_pair):
// each chunk's lanes equal, bit for bit, those of the one-chunk AVX2 kernel and of the portable loop, for
// fp32, bf16 and fp16 with NaN, ±Inf, ±0 and subnormals in both chunks. Skipped on a CPU without AVX-512F.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "dump/stats_lanes.h"
#include "parity/dump.h"

using namespace parity;
using parity::dump::detail::Lanes;

namespace {

void expect_same_lanes(const Lanes& a, const Lanes& b) {
  EXPECT_EQ(0, std::memcmp(a.sum, b.sum, sizeof a.sum));
  EXPECT_EQ(0, std::memcmp(a.sq, b.sq, sizeof a.sq));
  EXPECT_EQ(0, std::memcmp(a.mn, b.mn, sizeof a.mn));
  EXPECT_EQ(0, std::memcmp(a.mx, b.mx, sizeof a.mx));
  EXPECT_EQ(0, std::memcmp(a.amax, b.amax, sizeof a.amax));
  EXPECT_EQ(a.nan, b.nan);
  EXPECT_EQ(a.inf, b.inf);
  EXPECT_EQ(a.zero, b.zero);
  EXPECT_EQ(a.sub, b.sub);
}

template <typename Tr>
void check_pair(DType dt, const std::vector<typename Tr::Raw>& raw, int64_t n) {
  SCOPED_TRACE(dtype_name(dt));
  const auto* a = raw.data();
  const auto* b = raw.data() + n;
  Lanes pa, pb;
  const int64_t done = dump::detail::lanes_simd_pair(dt, a, b, n, pa, pb);
  if (done == 0) GTEST_SKIP() << "no AVX-512F on this CPU (or PARITY_STATS_AVX512=0)";
  ASSERT_EQ(done, n - n % dump::detail::kLanes);
  for (int side = 0; side < 2; ++side) {
    const auto* p = side ? b : a;
    Lanes one, scalar;
    EXPECT_EQ(dump::detail::lanes_simd(dt, p, n, one), done);
    dump::detail::lanes_scalar<Tr>(p, 0, done, scalar);
    expect_same_lanes(side ? pb : pa, one);
    expect_same_lanes(side ? pb : pa, scalar);
  }
}

TEST(StatsPair, EachChunkGetsTheOneChunkKernelsLanes) {
  const int64_t n = 1 << 16;
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> f(2 * n);
  for (auto& x : f) x = nd(rng);
  for (int64_t base : {int64_t{0}, n}) {  // specials in both chunks, in different lanes
    f[base + 3] = NAN;
    f[base + 12] = INFINITY;
    f[base + 21] = -INFINITY;
    f[base + 30] = 0.0f;
    f[base + 39] = -0.0f;
    f[base + 45] = 1e-41f;  // fp32 subnormal
  }
  f[n + 100] = -1e30f;
  std::vector<uint32_t> f32(2 * n);
  std::memcpy(f32.data(), f.data(), f.size() * 4);
  std::vector<uint16_t> bf(2 * n), h(2 * n);
  for (int64_t i = 0; i < 2 * n; ++i) {
    bf[i] = static_cast<uint16_t>(encode_rne(DType::kBF16, f[i]));
    h[i] = static_cast<uint16_t>(encode_rne(DType::kF16, f[i] * 1e-4f));  // reaches f16's subnormals
  }
  check_pair<dump::detail::F32Traits>(DType::kF32, f32, n);
  check_pair<dump::detail::BF16Traits>(DType::kBF16, bf, n);
  check_pair<dump::detail::F16Traits>(DType::kF16, h, n);
}

TEST(StatsPair, FusedStatsOverPairsEqualsChunkByChunk) {
  // 5.5 chunks: two pairs, then one full chunk and a partial one on their own. Summed chunk by chunk from
  // separate calls' lanes the result must be the same as one call's.
  const int64_t n = 5 * (1 << 16) + (1 << 15) + 3;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(1.0f, 4.0f);
  std::vector<float> f(n);
  for (auto& x : f) x = nd(rng);
  const TensorStats all = dump::fused_stats(DType::kF32, f.data(), n);
  const TensorStats threaded = dump::fused_stats(DType::kF32, f.data(), n, 3);
  EXPECT_EQ(0, std::memcmp(&all.mean, &threaded.mean, 8));
  EXPECT_EQ(0, std::memcmp(&all.l2norm, &threaded.l2norm, 8));
  double sum = 0, sq = 0;
  for (int64_t begin = 0; begin < n; begin += 1 << 16) {
    const int64_t len = std::min<int64_t>(1 << 16, n - begin);
    Lanes l;
    const int64_t done = dump::detail::lanes_simd(DType::kF32, f.data() + begin, len, l);
    dump::detail::lanes_scalar<dump::detail::F32Traits>(reinterpret_cast<const uint32_t*>(f.data() + begin), done,
                                                        len, l);
    double s = 0, q = 0;
    for (int j = 0; j < dump::detail::kLanes; ++j) {
      s += l.sum[j];
      q += l.sq[j];
    }
    sum += s;
    sq += q;
  }
  EXPECT_EQ(all.mean, sum / static_cast<double>(n));
  EXPECT_EQ(all.l2norm, std::sqrt(sq));
}

}  // namespace
