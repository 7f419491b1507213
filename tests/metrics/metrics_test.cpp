// compare_tensors: hand-computed cases, edge cases (empty, 0-d, single element, all-zero, NaN/Inf,
// integer dtypes, count mismatch), the ULP fast path against ulp_at, and reproducibility (threads,
// kernel variants, layouts).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "../core/same_stats.h"
#include "metrics/block_kernel.h"
#include "parity/metrics.h"

namespace parity {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::nan("");

template <typename T>
TensorView make(DType dt, const std::vector<T>& v, Shape shape = {}) {
  std::vector<std::byte> bytes(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  if (shape.empty() && v.size() != 1) shape = {static_cast<int64_t>(v.size())};
  return make_owned_tensor(dt, shape, std::move(bytes));
}
TensorView f32(const std::vector<float>& v, Shape shape = {}) { return make(DType::kF32, v, shape); }
TensorView f64(const std::vector<double>& v) { return make(DType::kF64, v); }

uint16_t to_bits(DType dt, double x) { return static_cast<uint16_t>(encode_rne(dt, x)); }
TensorView half_like(DType dt, const std::vector<double>& v) {
  std::vector<uint16_t> bits;
  for (double x : v) bits.push_back(to_bits(dt, x));
  return make(dt, bits);
}

PairMetrics run(const TensorView& g, const TensorView& t, MetricOptions o = {}) {
  auto r = compare_tensors(g, t, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : PairMetrics{};
}

TEST(Metrics, HandComputedSmallVector) {
  const PairMetrics m = run(f32({1, 2, 3, 4}), f32({1, 2, 3, 5}));
  EXPECT_EQ(m.numel, 4);
  EXPECT_EQ(m.compared, 4);
  EXPECT_DOUBLE_EQ(m.euclidean, 1.0);
  EXPECT_DOUBLE_EQ(m.rmse, 0.5);
  EXPECT_DOUBLE_EQ(m.rel_l2, 1.0 / std::sqrt(30.0));
  EXPECT_DOUBLE_EQ(m.sqnr_db, 10.0 * std::log10(30.0));
  EXPECT_DOUBLE_EQ(m.cosine, 34.0 / (std::sqrt(39.0) * std::sqrt(30.0)));
  EXPECT_EQ(m.max_abs, 1.0);
  EXPECT_EQ(m.max_abs_index, 3);
  EXPECT_EQ(m.mean_abs, 0.25);
  EXPECT_EQ(m.max_rel, 0.25);
  EXPECT_EQ(m.max_rel_index, 3);
  EXPECT_EQ(m.thousandth_ratio, 0.75);
  EXPECT_EQ(m.five_thousandth_ratio, 0.75);
  EXPECT_EQ(m.frac_abs_gt_1e6, 0.25);
  EXPECT_EQ(m.frac_abs_gt_1e2, 0.25);
  // ulp_f32(4) = 2^(2-23): an error of 1 is 2^21 ULP.
  EXPECT_EQ(m.ulp_max, 2097152.0);
  EXPECT_EQ(m.ulp_mean, 2097152.0 / 4);
  EXPECT_EQ(m.frac_ulp_gt1, 0.25);
  EXPECT_EQ(m.golden.min, 1.0);
  EXPECT_EQ(m.golden.max, 4.0);
  EXPECT_EQ(m.golden.mean, 2.5);
  EXPECT_DOUBLE_EQ(m.golden.l2norm, std::sqrt(30.0));
  EXPECT_DOUBLE_EQ(m.golden.std, std::sqrt(1.25));
  EXPECT_EQ(m.golden.absmax, 4.0);
  EXPECT_EQ(m.target.max, 5.0);
  EXPECT_TRUE(m.nonfinite_agree);
  EXPECT_FALSE(m.kl_computed);
}

TEST(Metrics, MsprobeEpsilonWhereGoldenIsZero) {
  const double eps = std::numeric_limits<double>::epsilon();
  const PairMetrics m = run(f64({0.0, 0.0, 1.0}), f64({0.0, 1e-3, 1.0}));
  // Both zero: (0+ε − (0+ε))/ε = 0. Golden zero, target 1e-3: |(1e-3+ε) − ε| / ε.
  EXPECT_EQ(m.max_rel, std::fabs((1e-3 + eps) - eps) / eps);
  EXPECT_EQ(m.max_rel_index, 1);
  EXPECT_DOUBLE_EQ(m.thousandth_ratio, 2.0 / 3.0);
  EXPECT_EQ(m.golden.zero_count, 2);
  EXPECT_EQ(m.target.zero_count, 1);
}

TEST(Metrics, AgreeingNonFiniteAreExcluded) {
  const PairMetrics m = run(f32({1, NAN, INFINITY, -INFINITY, 2}), f32({1.5, NAN, INFINITY, -INFINITY, 2}));
  EXPECT_TRUE(m.nonfinite_agree);
  EXPECT_EQ(m.nonfinite_mismatch, 0);
  EXPECT_EQ(m.compared, 2);
  EXPECT_EQ(m.max_abs, 0.5);
  EXPECT_EQ(m.max_abs_index, 0);
  EXPECT_EQ(m.mean_abs, 0.25);
  for (const TensorStats* s : {&m.golden, &m.target}) {
    EXPECT_EQ(s->nan_count, 1);
    EXPECT_EQ(s->pinf_count, 1);
    EXPECT_EQ(s->ninf_count, 1);
    EXPECT_EQ(s->inf_count, 2);  // the total, and the split known (parity/tensor.h)
    EXPECT_TRUE(s->inf_split_known());
    EXPECT_EQ(s->numel, 5);
  }
  EXPECT_EQ(m.golden.max, 2.0);  // statistics over finite elements only
  EXPECT_EQ(m.golden.mean, 1.5);
}

TEST(Metrics, MismatchedNonFiniteIsFlaggedAndCounted) {
  const PairMetrics m = run(f32({1, NAN, 3, INFINITY}), f32({1, 2, INFINITY, -INFINITY}));
  EXPECT_FALSE(m.nonfinite_agree);
  EXPECT_EQ(m.nonfinite_mismatch, 3);
  EXPECT_EQ(m.compared, 1);  // only position 0 has both sides finite
  EXPECT_EQ(m.max_abs, 0.0);
  EXPECT_EQ(m.golden.nan_count, 1);
  EXPECT_EQ(m.target.pinf_count, 1);
  EXPECT_EQ(m.target.ninf_count, 1);
  EXPECT_EQ(m.target.max, 2.0);  // side statistics include finite values facing a non-finite one
}

TEST(Metrics, EmptyTensors) {
  const PairMetrics m = run(f32({}), f32({}));
  EXPECT_EQ(m.numel, 0);
  EXPECT_EQ(m.compared, 0);
  EXPECT_TRUE(std::isnan(m.cosine));
  EXPECT_TRUE(std::isnan(m.max_abs));
  EXPECT_EQ(m.max_abs_index, -1);
  EXPECT_TRUE(std::isnan(m.golden.mean));
  EXPECT_EQ(m.golden.nan_count, 0);
  EXPECT_TRUE(m.nonfinite_agree);
}

// One statistics struct (parity/tensor.h), one spelling of "no finite element" per producer: a pair's
// side says NaN, compute_stats of the same tensor 0 (what statistics dumps publish); the counts agree,
// subnormals aside (a side counts them in the target's dtype).
TEST(Metrics, SideWithoutFiniteValuesIsNaNWhereComputeStatsSaysZero) {
  const TensorView g = f32({NAN, INFINITY, -INFINITY, -INFINITY});
  const PairMetrics m = run(g, g);
  const TensorStats alone = compute_stats(g);
  for (double v : {m.golden.min, m.golden.max, m.golden.mean, m.golden.l2norm, m.golden.std, m.golden.absmax})
    EXPECT_TRUE(std::isnan(v));
  for (double v : {alone.min, alone.max, alone.mean, alone.l2norm, alone.absmax}) EXPECT_EQ(v, 0.0);
  for (const TensorStats* s : {&m.golden, &alone}) {
    EXPECT_EQ(s->numel, 4);
    EXPECT_EQ(s->nan_count, 1);
    EXPECT_EQ(s->inf_count, 3);
    EXPECT_EQ(s->pinf_count, 1);
    EXPECT_EQ(s->ninf_count, 2);
  }
}

// Both norms at or below 2^-52 read cosine 1 (msprobe's "both zero"), even for x vs -x at 1e-18
// (issue 14). Non-zero tiny sides are now measured, scale-invariantly; both all zero is still 1.
TEST(Metrics, TinyNormsStillMeasureTheCosine) {
  EXPECT_EQ(run(f64({1e-18, 2e-18, -3e-18}), f64({-1e-18, -2e-18, 3e-18})).cosine, -1.0);
  EXPECT_EQ(run(f64({1e-18, 2e-18, -3e-18}), f64({1e-18, 2e-18, -3e-18})).cosine, 1.0);
  EXPECT_NEAR(run(f64({1e-18, 0}), f64({0, 1e-18})).cosine, 0.0, 1e-15);
  // squares underflow to 0 here: the scaled pass still sees the sign flip
  EXPECT_EQ(run(f64({4e-300, -1e-300}), f64({-4e-300, 1e-300})).cosine, -1.0);
  const float s = 1e-30f;  // float32 values whose norm is below 2^-52
  EXPECT_NEAR(run(f32({s, 2 * s, 3 * s}), f32({-s, -2 * s, -3 * s})).cosine, -1.0, 1e-12);
  EXPECT_EQ(run(f64({0, 0}), f64({1e-18, 1e-18})).cosine, 1.0);  // one side all zero: msprobe's 1 stays
}

TEST(Metrics, ZeroDimAndSingleElementHaveNoCosine) {
  const PairMetrics zero_d = run(f32({2.0f}, {}), f32({2.5f}, {}));
  EXPECT_TRUE(std::isnan(zero_d.cosine));
  EXPECT_EQ(zero_d.max_abs, 0.5);
  EXPECT_EQ(zero_d.max_rel, 0.25);
  const PairMetrics one = run(f32({2.0f}, {1}), f32({2.0f}, {1}));
  EXPECT_TRUE(std::isnan(one.cosine));
  EXPECT_EQ(one.max_abs, 0.0);
  EXPECT_EQ(one.sqnr_db, kInf);
}

TEST(Metrics, AllZero) {
  const PairMetrics both = run(f32({0, 0, 0}), f32({0, 0, 0}));
  EXPECT_EQ(both.cosine, 1.0);
  EXPECT_EQ(both.rel_l2, 0.0);
  EXPECT_EQ(both.sqnr_db, kInf);
  EXPECT_EQ(both.max_rel, 0.0);
  EXPECT_EQ(both.thousandth_ratio, 1.0);
  const PairMetrics golden_zero = run(f32({0, 0, 0}), f32({0, 1, 0}));
  EXPECT_TRUE(std::isnan(golden_zero.cosine));
  EXPECT_TRUE(std::isnan(golden_zero.rel_l2));
  EXPECT_EQ(golden_zero.sqnr_db, -kInf);
  const PairMetrics target_zero = run(f32({1, 2}), f32({0, 0}));
  EXPECT_TRUE(std::isnan(target_zero.cosine));
  EXPECT_EQ(target_zero.rel_l2, 1.0);
}

TEST(Metrics, ElementCountMismatchIsAnError) {
  auto r = compare_tensors(f32({1, 2, 3}), f32({1, 2}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
  EXPECT_NE(r.status().message().find("golden [3] has 3 elements"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("target [2] has 2"), std::string::npos) << r.status().message();
}

TEST(Metrics, SameCountDifferentShapeIsComparedFlat) {
  const PairMetrics m = run(f32({1, 2, 3, 4}, {2, 2}), f32({1, 2, 3, 5}, {4}));
  EXPECT_EQ(m.max_abs_index, 3);
}

TEST(Metrics, IntegerDtypes) {
  // Integer golden, float target: ULP measured in fp32 at the golden value.
  const PairMetrics a = run(make<int32_t>(DType::kI32, {1, 2, 3}), f32({1, 2, 3.5f}));
  EXPECT_EQ(a.max_abs, 0.5);
  EXPECT_EQ(a.ulp_max, 0.5 / ulp_at(DType::kF32, 3.0));
  // Integer target: adjacent values are 1 apart, so the ULP error is the absolute error.
  const PairMetrics b = run(f32({1.5f, 2}), make<int32_t>(DType::kI32, {1, 2}));
  EXPECT_EQ(b.ulp_max, 0.5);
  EXPECT_EQ(b.target.subnormal_count, 0);
  EXPECT_EQ(b.ftz_count, 0);
}

TEST(Metrics, SubnormalAndFlushToZeroInTargetDtype) {
  // fp16's smallest normal is 2^-14 ≈ 6.1e-5: 1e-6 is subnormal there though normal in fp32.
  const PairMetrics m = run(f32({1e-6f, 1e-6f, 1.0f, 0.0f}), half_like(DType::kF16, {0.0, 1e-6, 1.0, 0.0}));
  EXPECT_EQ(m.golden.subnormal_count, 2);
  EXPECT_EQ(m.target.subnormal_count, 1);
  EXPECT_EQ(m.ftz_count, 1);
  EXPECT_EQ(m.golden.zero_count, 1);
  EXPECT_EQ(m.target.zero_count, 2);
  // A user bound overrides the dtype's smallest normal.
  MetricOptions o;
  o.ftz_tiny = 1e-7;
  EXPECT_EQ(run(f32({1e-6f}), half_like(DType::kF16, {0.0}), o).ftz_count, 0);
}

// A tensor of dtype `dt` holding the values of `v` rounded to nearest-even.
TensorView typed(DType dt, const std::vector<double>& v) {
  switch (dtype_size(dt)) {
    case 8: return f64(v);
    case 4: {
      std::vector<float> f(v.begin(), v.end());
      return f32(f);
    }
    case 2: return half_like(dt, v);
    default: {
      std::vector<uint8_t> bits;
      for (double x : v) bits.push_back(static_cast<uint8_t>(encode_rne(dt, x)));
      return make(dt, bits);
    }
  }
}

TEST(Metrics, UlpFastPathMatchesUlpAt) {
  // The kernel builds 1/ulp from exponent bits; it must equal |t − g| / ulp_at(target dtype, g) over
  // every binade, the subnormal range and golden zeros, for every float target dtype.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mant(1.0, 2.0), rel(-0.3, 0.3);
  int checked = 0;
  for (DType dt : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kF8E4M3, DType::kF8E5M2}) {
    for (int e = -1080; e <= 1020; e += (dt == DType::kF64 ? 7 : 1)) {
      const double g = std::ldexp(mant(rng), e) * ((e & 1) ? -1.0 : 1.0);
      const double t = round_to(dt, g * (1 + rel(rng)));
      if (!std::isfinite(t) || g == t) continue;
      const PairMetrics m = run(f64({g}), typed(dt, {t}));
      EXPECT_EQ(m.ulp_max, std::fabs(t - g) / ulp_at(dt, g)) << dtype_name(dt) << " g=" << g << " t=" << t;
      ++checked;
    }
    const double tiny = float_format(dt)->min_subnormal;
    const PairMetrics z = run(f64({0.0}), typed(dt, {3 * tiny}));
    EXPECT_EQ(z.ulp_max, 3.0) << dtype_name(dt);
  }
  EXPECT_GT(checked, 1000);
}

TEST(Metrics, FirstIndexOfMaximaAcrossBlocksAndChunks) {
  std::vector<float> g(200000, 1.0f), t(200000, 1.0f);
  t[70001] = 3.0f;   // chunk 1
  t[150000] = 3.0f;  // chunk 2, same error: the first one wins
  t[5] = -1.0f;      // same |error| 2 as above, earlier still
  MetricOptions o;
  o.threads = 2;
  const PairMetrics m = run(f32(g), f32(t), o);
  EXPECT_EQ(m.max_abs, 2.0);
  EXPECT_EQ(m.max_abs_index, 5);
  EXPECT_EQ(m.max_rel_index, 5);
}

std::vector<float> random_floats(size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

using test::same_bits;

// Every field of PairMetrics, bit for bit.
void expect_identical(const PairMetrics& a, const PairMetrics& b) {
  for (auto [x, y] : {std::pair{a.cosine, b.cosine}, {a.euclidean, b.euclidean}, {a.rel_l2, b.rel_l2},
                      {a.rmse, b.rmse}, {a.sqnr_db, b.sqnr_db}, {a.max_abs, b.max_abs}, {a.mean_abs, b.mean_abs},
                      {a.max_rel, b.max_rel}, {a.thousandth_ratio, b.thousandth_ratio},
                      {a.five_thousandth_ratio, b.five_thousandth_ratio}, {a.frac_abs_gt_1e6, b.frac_abs_gt_1e6},
                      {a.frac_abs_gt_1e4, b.frac_abs_gt_1e4}, {a.frac_abs_gt_1e2, b.frac_abs_gt_1e2},
                      {a.ulp_mean, b.ulp_mean}, {a.ulp_max, b.ulp_max}, {a.frac_ulp_gt1, b.frac_ulp_gt1}}) {
    EXPECT_TRUE(same_bits(x, y)) << x << " vs " << y;
  }
  EXPECT_EQ(a.numel, b.numel);
  EXPECT_EQ(a.compared, b.compared);
  EXPECT_EQ(a.max_abs_index, b.max_abs_index);
  EXPECT_EQ(a.max_rel_index, b.max_rel_index);
  EXPECT_EQ(a.nonfinite_mismatch, b.nonfinite_mismatch);
  EXPECT_EQ(a.ftz_count, b.ftz_count);
  test::expect_same_stats_bits(a.golden, b.golden);
  test::expect_same_stats_bits(a.target, b.target);
}

TEST(Metrics, ResultsDoNotDependOnThreadCount) {
  const auto g = random_floats(300001, 1, 1.0f), t = random_floats(300001, 2, 1.0f);
  MetricOptions one, two, four;
  one.threads = 1;
  two.threads = 2;
  four.threads = 4;
  const PairMetrics a = run(f32(g), f32(t), one);
  expect_identical(a, run(f32(g), f32(t), two));
  expect_identical(a, run(f32(g), f32(t), four));
}

// Large pairs whose blocks take every path of the kernel — the fused fp32/bf16 kernel with plain sums
// (exact), the fused kernel with TwoSum (magnitudes spanning more than 2^19), the general kernel
// (zeros, NaN, ±Inf, subnormals), a tail block — give the same bits on 1, 2 and 4 threads.
TEST(Metrics, ResultsDoNotDependOnThreadCountOnAnyPath) {
  const size_t n = (size_t{1} << 21) + 13;
  auto g = random_floats(n, 11, 1.0f), t = g;
  std::mt19937_64 rng(12);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) t[i] = g[i] * (1 + 1e-3f * nd(rng));
  for (size_t i = 5 * 65536; i < 5 * 65536 + 4096; ++i) g[i] *= (i % 3 == 0) ? 1e12f : 1.0f;  // wide range
  for (size_t i = 9 * 65536 + 17; i < n; i += 70001) t[i] = 0;                          // zeros
  g[20 * 65536 + 3] = t[20 * 65536 + 3] = NAN;
  t[21 * 65536 + 5] = INFINITY;
  g[22 * 65536 + 7] = 1e-40f;  // subnormal
  std::vector<double> gd(g.begin(), g.end()), td(t.begin(), t.end());
  for (auto [gdt, tdt] : {std::pair{DType::kF32, DType::kF32}, {DType::kF32, DType::kBF16}, {DType::kBF16, DType::kBF16}}) {
    // bf16 × bf16 also takes the fp32-lane kernel, whose max_rel is resolved per chunk.
    const TensorView gv = gdt == DType::kF32 ? f32(g) : half_like(DType::kBF16, gd);
    const TensorView tv = tdt == DType::kF32 ? f32(t) : half_like(DType::kBF16, td);
    MetricOptions one, two, four;
    one.threads = 1;
    two.threads = 2;
    four.threads = 4;
    const PairMetrics a = run(gv, tv, one);
    expect_identical(a, run(gv, tv, two));
    expect_identical(a, run(gv, tv, four));
    EXPECT_EQ(a.nonfinite_mismatch, 1);
    EXPECT_GT(a.target.zero_count, 0);
  }
}

// The fused kernel (block_kernel_impl.h, fast_impl) must produce the general kernel's Partial bit for
// bit on every block it accepts, and refuse the blocks it cannot measure that way.
// A block of the bf16 × bf16 fp32-lane kernel (b.max_rel_fp32) sums the same exact terms in another
// order (8 lanes of 128 terms): each sum within (127 + 3)u·Σ|terms| of the exact one, the general
// kernel's within (255 + 2)u·Σ|terms| (Σ|tg| ≤ √(Σg²·Σt²)); its max_rel is the fp32 rounding of the fp64
// maximum; m2 is checked by the caller. Everything else must be bit-identical. A block whose sums went
// through fp32 lanes (b.lane_sums_fp32, the AVX-512 bf16 kernel) has each sum within δ = 16·2⁻²⁴ of
// Σ|terms| and each side's mean within δ·Σ|x|/n ≤ δ·√(Σx²/n) (docs/metrics.md "Error bounds of the
// kernel"); the general kernel's own error is far below and covered by 1e-12 relative.
constexpr double kLaneDelta = 16 * 0x1p-24;

void expect_same_partial(const metrics_detail::Partial& a, const metrics_detail::Partial& b) {
  using metrics_detail::SidePartial;
  const double ds_mag = std::sqrt(a.sum_d2) * (std::sqrt(a.sum_gg) + std::sqrt(a.sum_tt));  // ≥ Σ|d|·|g + t|
  if (b.max_rel_fp32) {
    const double u = 0x1p-53, k = 130 + 257;
    const double bound = b.lane_sums_fp32 ? kLaneDelta + 1e-12 : k * u;
    for (auto [x, y, mag] : {std::tuple{a.sum_d2, b.sum_d2, a.sum_d2}, {a.sum_ad, b.sum_ad, a.sum_ad},
                             {a.sum_tg, b.sum_tg, std::sqrt(a.sum_gg * a.sum_tt)}, {a.sum_gg, b.sum_gg, a.sum_gg},
                             {a.sum_tt, b.sum_tt, a.sum_tt}, {a.sum_ulp, b.sum_ulp, a.sum_ulp},
                             {a.sum_tt - a.sum_gg, b.lane_sums_fp32 ? b.sum_ds : b.sum_tt - b.sum_gg,
                              ds_mag + k * u * (a.sum_gg + a.sum_tt)}}) {
      EXPECT_LE(std::fabs(x - y), bound * mag) << x << " vs " << y;
    }
    EXPECT_TRUE(same_bits(static_cast<float>(a.max_rel), b.max_rel)) << a.max_rel << " vs " << b.max_rel;
    for (auto [x, y] : {std::pair{a.max_ulp, b.max_ulp}, {a.max_ad, b.max_ad}}) {
      EXPECT_TRUE(same_bits(x, y)) << x << " vs " << y;
    }
    EXPECT_TRUE(same_bits(a.g.sumsq, a.sum_gg) && same_bits(b.g.sumsq, b.sum_gg));
    EXPECT_TRUE(same_bits(a.t.sumsq, a.sum_tt) && same_bits(b.t.sumsq, b.sum_tt));
  } else {
    EXPECT_FALSE(b.lane_sums_fp32);
    for (auto [x, y] : {std::pair{a.sum_d2, b.sum_d2}, {a.sum_ad, b.sum_ad}, {a.sum_tg, b.sum_tg},
                        {a.sum_gg, b.sum_gg}, {a.sum_tt, b.sum_tt}, {a.sum_ulp, b.sum_ulp}, {a.sum_ds, b.sum_ds},
                        {a.max_ulp, b.max_ulp}, {a.max_ad, b.max_ad}, {a.max_rel, b.max_rel}}) {
      EXPECT_TRUE(same_bits(x, y)) << x << " vs " << y;
    }
  }
  for (auto [x, y] : {std::pair{a.elements, b.elements}, {a.both, b.both}, {a.mismatch, b.mismatch},
                      {a.ulp_gt1, b.ulp_gt1}, {a.rel_lt_1e3, b.rel_lt_1e3}, {a.rel_lt_5e3, b.rel_lt_5e3},
                      {a.abs_gt_1e6, b.abs_gt_1e6}, {a.abs_gt_1e4, b.abs_gt_1e4}, {a.abs_gt_1e2, b.abs_gt_1e2},
                      {a.ftz, b.ftz}, {a.max_ad_index, b.max_ad_index}, {a.max_rel_index, b.max_rel_index}}) {
    EXPECT_EQ(x, y) << "ulp_gt1 " << a.ulp_gt1 << "/" << b.ulp_gt1 << " rel " << a.rel_lt_1e3 << "/" << b.rel_lt_1e3 << " "
                    << a.rel_lt_5e3 << "/" << b.rel_lt_5e3 << " abs " << a.abs_gt_1e6 << "/" << b.abs_gt_1e6 << " "
                    << a.abs_gt_1e4 << "/" << b.abs_gt_1e4 << " " << a.abs_gt_1e2 << "/" << b.abs_gt_1e2;
  }
  for (auto [sa, sb] : {std::pair<const SidePartial*, const SidePartial*>{&a.g, &b.g}, {&a.t, &b.t}}) {
    if (!b.max_rel_fp32) {
      EXPECT_TRUE(same_bits(sa->sumsq, sb->sumsq)) << sa->sumsq << " vs " << sb->sumsq;
    }
    if (b.lane_sums_fp32) {
      const double spread = std::sqrt(sa->sumsq / static_cast<double>(sa->finite));
      EXPECT_LE(std::fabs(sa->mean - sb->mean), (kLaneDelta + 1e-12) * spread) << sa->mean << " vs " << sb->mean;
    } else {
      EXPECT_TRUE(same_bits(sa->mean, sb->mean)) << sa->mean << " vs " << sb->mean;
    }
    for (auto [x, y] : {std::pair{sa->m2, sb->m2}, {sa->min, sb->min}, {sa->max, sb->max}}) {
      EXPECT_TRUE(same_bits(x, y)) << x << " vs " << y;
    }
    for (auto [x, y] : {std::pair{sa->finite, sb->finite}, {sa->zero, sb->zero}, {sa->subnormal, sb->subnormal},
                        {sa->pinf, sb->pinf}, {sa->ninf, sb->ninf}}) {
      EXPECT_EQ(x, y);
    }
  }
}

TEST(Metrics, FusedKernelMatchesGeneralKernel) {
  using namespace metrics_detail;
  struct Variant {
    BlockFn block;
    FastFn (*fast)(DType, DType);
    bool runs;
  };
  const Variant variants[] = {
      {block_kernel_generic(), &fast_kernel_generic, true},
      {block_kernel_avx2(), &fast_kernel_avx2, block_kernel_avx2() != nullptr && __builtin_cpu_supports("avx2")},
      {block_kernel_avx512(), &fast_kernel_avx512,
       block_kernel_avx512() != nullptr && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")}};
  std::mt19937_64 rng(21);
  std::normal_distribution<double> nd(0.0, 1.0);
  // Blocks: (values of g, of t, whether the fused kernel must accept them).
  struct Case {
    std::vector<double> g, t;
    bool clean;
  };
  std::vector<Case> cases;
  auto near = [&](double scale, double rel) {
    Case c{{}, {}, true};
    for (int64_t i = 0; i < kBlock; ++i) {
      double x = nd(rng) * scale;
      if (x == 0) x = scale;
      c.g.push_back(x);
      c.t.push_back(x * (1 + rel * nd(rng)));
    }
    return c;
  };
  cases.push_back(near(1.0, 1e-3));     // plain sums exact
  cases.push_back(near(1e30, 1e-6));    // large magnitudes
  cases.push_back(near(1e-30, 1e-2));   // small but normal
  cases.push_back(near(1.0, 1.0));      // unrelated sides: every count and maximum moves
  // Magnitudes spanning 2^60, so plain sums would round: in each lane +2^60, x, −2^60, y, … — a plain
  // sum loses every x, TwoSum keeps them (the exact total is Σx + Σy, small).
  Case wide = near(1.0, 1e-3);
  for (int64_t i = 0; i < kBlock; ++i) {
    const int64_t j = i / 4;
    if (j % 2 == 0) wide.g[i] = wide.t[i] = j % 4 == 0 ? 0x1p60 : -0x1p60;
  }
  cases.push_back(wide);
  // Blocks off zero mean: one_pass_m2 takes mean² < 15·variance (offsets 1, 3.5, 3.85 on unit spread),
  // the two-pass form the rest (3.95, 10, 1e4, and a constant block, m2 = 0).
  for (double offset : {1.0, 3.5, 3.85, 3.95, 10.0, 1e4}) {
    Case c = near(1.0, 1e-3);
    for (int64_t i = 0; i < kBlock; ++i) {
      c.g[i] += offset;
      c.t[i] += offset;
    }
    cases.push_back(c);
  }
  cases.push_back(Case{std::vector<double>(kBlock, 0.75), std::vector<double>(kBlock, 0.75), true});
  // For the bf16 fp32-lane kernel: exponent gaps of ±14, ±15 and ±16 between t and g in one element (t − g
  // exact in fp32 up to 15: the kernel refuses ≥ 15); |g| around 2^-120 (its ULP scale's limit);
  // magnitudes from 2^-100 to 2^100 with one-ulp differences; t = g ± one ulp (near-identical sides,
  // the |d| counts land on every threshold's neighbourhood); sign flips.
  for (int gap : {14, 15, 16, -14, -15, -16}) {
    Case c = near(1.0, 1e-3);
    c.t[77] = c.g[77] * std::ldexp(1.0, gap);
    cases.push_back(c);
  }
  // Gaps of ±20 with a significand of t unlike g's, so that t − g needs ~29 bits and is not exact in
  // fp32: a kernel that let such a block through would get |d| (and the sums) wrong.
  for (int gap : {20, -20}) {
    Case c = near(1.0, 1e-3);
    c.g[77] = 1.0078125;
    c.t[77] = std::ldexp(1.6484375, gap);
    cases.push_back(c);
  }
  for (double scale : {0x1p-119, 0x1p-121}) {
    Case c = near(1.0, 1e-2);
    for (int64_t i = 0; i < kBlock; ++i) {
      c.g[i] = scale * (1.0 + (i % 128) / 128.0) * (i % 3 ? 1 : -1);
      c.t[i] = c.g[i] * (1 + 1e-2 * nd(rng));
    }
    cases.push_back(c);
  }
  {
    Case c = near(1.0, 0.0);
    for (int64_t i = 0; i < kBlock; ++i) {
      c.g[i] = std::ldexp(1.0 + (i % 128) / 128.0, static_cast<int>(i % 41) * 5 - 100) * (i % 3 ? 1 : -1);
      c.t[i] = c.g[i] * (1 + (i % 5 - 2) / 128.0);
    }
    cases.push_back(c);
    for (int64_t i = 0; i < kBlock; ++i) {
      c.g[i] = std::ldexp(1.0 + (i % 128) / 128.0, static_cast<int>(i % 17) - 20);  // |d| near 1e-6 … 1e-2
      c.t[i] = c.g[i] + std::ldexp(i % 2 ? 1.0 : -1.0, static_cast<int>(i % 17) - 27);
    }
    cases.push_back(c);
    for (int64_t i = 0; i < kBlock; ++i) c.t[i] = i % 7 ? c.g[i] : -c.g[i];
    cases.push_back(c);
  }
  Case cancel = near(1.0, 1e-7);        // ±1e6 pairs that cancel: mean ≈ 0
  for (int64_t i = 0; i < kBlock; ++i) cancel.g[i] = cancel.t[i] = (i % 2 ? -1e6 : 1e6) + cancel.g[i];
  cases.push_back(cancel);
  for (double bad : {0.0, -0.0, kNan, kInf, -kInf, 1e-40}) {  // refused: the general kernel measures these
    Case c = near(1.0, 1e-3);
    c.t[100] = bad;
    c.clean = false;
    cases.push_back(c);
    Case d = near(1.0, 1e-3);
    d.g[kBlock - 1] = bad;
    d.clean = false;
    cases.push_back(d);
  }
  int checked = 0, one_pass_checked = 0, fp32_lanes_checked = 0, fp32_sums_checked = 0;
  for (const Variant& v : variants) {
    if (!v.runs) continue;
    for (DType gdt : {DType::kF32, DType::kBF16}) {
      for (DType tdt : {DType::kF32, DType::kBF16}) {
        const FastFn fast = v.fast(gdt, tdt);
        ASSERT_NE(fast, nullptr);
        KernelParams p;
        const int mbits = tdt == DType::kF32 ? 23 : 7;
        p.rel_epsilon = 0x1p-52;
        p.min_normal_t = p.ftz_tiny = 0x1p-126;
        p.ulp_mode = UlpMode::kPow2;
        p.ulp_pow2_base = static_cast<uint64_t>(2046 + mbits) << 52;
        p.ulp_sub = std::ldexp(1.0, 126 + mbits);
        for (const Case& c : cases) {
          auto encode = [](DType dt, const std::vector<double>& x) {
            return dt == DType::kF32 ? f32(std::vector<float>(x.begin(), x.end())) : half_like(dt, x);
          };
          const TensorView gv = encode(gdt, c.g), tv = encode(tdt, c.t);
          for (int64_t n : {kBlock, int64_t{8}, int64_t{12}}) {
            std::vector<double> gd(kBlock + 4, NAN), td(kBlock + 4, NAN);
            decode_to_double(gv, 0, n, gd.data());
            decode_to_double(tv, 0, n, td.data());
            Partial want, got, got2;
            v.block(gd.data(), td.data(), n, p, want);
            bool compensate = false, compensate_now = true, two_pass = false, two_pass_now = true;
            const bool accepted = fast(gv.data, tv.data, n, p, got, compensate, two_pass);
            // Told to take TwoSum and the two-pass std at once, it must give the general kernel's bits,
            // m2 included.
            EXPECT_EQ(fast(gv.data, tv.data, n, p, got2, compensate_now, two_pass_now), accepted);
            if (accepted) expect_same_partial(want, got2);
            if (accepted && !two_pass) {
              // The one-pass std (one_pass_m2): within its bound 264u·Σx² of the exact m2, which the
              // general kernel's two-pass m2 knows to (k + 3)u·m2; S2 ≤ 16·m2 was required.
              // From fp32-lane sums: within 3δ·Σx², and S2 ≤ 2·m2 was required.
              for (auto [w, g] : {std::pair{&want.g, &got.g}, {&want.t, &got.t}}) {
                const double u = 0x1p-53;
                const bool lanes = got.lane_sums_fp32;
                EXPECT_LE(std::fabs(g->m2 - w->m2), (lanes ? 3 * kLaneDelta : 264 * u) * g->sumsq + 300 * u * w->m2)
                    << "case " << (&c - cases.data());
                EXPECT_LE(g->sumsq, (lanes ? 2 : 16) * g->m2 * (1 + 1e-12));
                ++one_pass_checked;
                g->m2 = w->m2;  // the rest must be bit-identical
              }
            }
            // A bf16 rounding can turn a tiny normal into a subnormal, so "clean" is the decoded data's.
            bool clean = n % 8 == 0;
            for (int64_t i = 0; i < n; ++i) {
              clean = clean && std::isfinite(gd[i]) && std::isfinite(td[i]) && std::fabs(gd[i]) >= p.min_normal_t &&
                      std::fabs(td[i]) >= p.min_normal_t;
            }
            EXPECT_EQ(accepted, clean) << "n " << n << " case " << (&c - cases.data());
            if (n == kBlock) {
              EXPECT_EQ(clean, c.clean) << "case " << (&c - cases.data());
            }
            if (accepted) {
              expect_same_partial(want, got);
              ++checked;
              fp32_lanes_checked += got.max_rel_fp32;
              fp32_sums_checked += got.lane_sums_fp32;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
  EXPECT_GT(one_pass_checked, 0);
  EXPECT_GE(fp32_lanes_checked, 10);  // bf16 × bf16 blocks of the fp32-lane kernel
  if (variants[2].runs) {
    EXPECT_GE(fp32_sums_checked, 5);  // ... of them with fp32-lane sums (AVX-512)
  }
  std::printf("fused blocks checked: %d, one-pass std: %d, bf16 fp32 lanes: %d (fp32 sums: %d)\n", checked,
              one_pass_checked, fp32_lanes_checked, fp32_sums_checked);
}

// The bf16 × bf16 fp32-lane kernel counts relative errors below 1e-3 / 5e-3 on fl32(|t − g| / |g|)
// against the nearest float to each threshold; that equals the fp64 kernel's count for every
// pair of bf16 values. The quotient depends only on t/g, so g over one binade [1, 2) (128 values) and t
// over [1/2, 4) of either sign cover every quotient below 1/2 (elsewhere both sides count 0).
TEST(Metrics, Bf16RelativeThresholdsAreExactInFp32) {
  auto bf16 = [](uint32_t bits) {
    const uint32_t w = bits << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
  };
  int64_t pairs = 0;
  for (uint32_t gb = 0x3F80; gb < 0x4000; ++gb) {
    for (uint32_t tb = 0x3F00; tb < 0x4080; ++tb) {
      for (uint32_t sign : {0u, 0x8000u}) {
        const float g = bf16(gb), t = bf16(tb | sign);
        const float d32 = t - g;
        ASSERT_EQ(static_cast<double>(d32), static_cast<double>(t) - static_cast<double>(g));  // exact
        const float rel32 = std::fabs(d32) / std::fabs(g);
        const double rel64 = std::fabs(static_cast<double>(t) - static_cast<double>(g)) / std::fabs(static_cast<double>(g));
        for (double thr : {1e-3, 5e-3}) {
          ASSERT_EQ(rel32 < static_cast<float>(thr), rel64 < thr) << g << " " << t;
        }
        ASSERT_EQ(static_cast<float>(rel64), rel32);  // fl32 of the fp64 value: the block maximum's rule
        ++pairs;
      }
    }
  }
  EXPECT_EQ(pairs, 128 * 384 * 2);
}

// The tensor's maxima and their first indices when they sit in different chunks, in spans of the bf16
// fp32-lane kernel (which carry only the fp32 rounding of their max relative error; B sits in the third
// block of its span, so a scan of the span's first block alone misses it) and in blocks the general
// kernel measured in fp64 (here: a block with an agreeing NaN, whose span then goes block by block). The two planted quotients A < B,
// 1 − t/g with |t| 9 to 14 binades below |g| (not max_rel_fp32_distinct), round to the same fp32 value,
// so only a scan in fp64 tells them apart. Checked against a direct fp64 loop, at one and two threads.
TEST(Metrics, Bf16MaximaResolvedAcrossChunks) {
  auto bf16 = [](uint32_t bits) {
    const uint32_t w = bits << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return static_cast<double>(f);
  };
  auto round_bf16 = [&](double x) { return bf16(to_bits(DType::kBF16, x)); };
  // Two pairs (g, t), g in [1, 2), t in [2^-14, 2^-9): |t − g|/|g| equal in fp32, different in fp64.
  double ga = 0, ta = 0, gb = 0, tb = 0;
  std::map<float, std::pair<double, double>> seen;  // fl32 quotient → a pair giving it
  for (uint32_t g_bits = 0x3F80; g_bits < 0x4000 && gb == 0; ++g_bits) {
    for (uint32_t t_bits = 0x3880; t_bits < 0x3B00 && gb == 0; ++t_bits) {
      const double g = bf16(g_bits), t = bf16(t_bits);
      const float q32 = static_cast<float>(g - t) / static_cast<float>(g);  // the kernel's |d| / |g|
      auto [it, fresh] = seen.try_emplace(q32, g, t);
      const double q = (g - t) / g, q_seen = (it->second.first - it->second.second) / it->second.first;
      if (fresh || q == q_seen) continue;
      const auto [g0, t0] = it->second;
      std::tie(ga, ta, gb, tb) = q < q_seen ? std::tuple(g, t, g0, t0) : std::tuple(g0, t0, g, t);
    }
  }
  ASSERT_NE(gb, 0.0) << "no two bf16 quotients share an fp32 rounding";
  ASSERT_LT((ga - ta) / ga, (gb - tb) / gb);

  const int64_t n = 5 * metrics_detail::kChunk;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<double> g(static_cast<size_t>(n)), t(g.size());
  for (int64_t i = 0; i < n; ++i) {  // rounding-level noise, signs mixed (the kernel's m2 bound)
    g[i] = round_bf16(nd(rng));
    t[i] = g[i] * (1 + 0x1p-9 * nd(rng));
  }
  auto plant = [&](int64_t i, double gv, double tv) { g[i] = gv, t[i] = tv; };
  const int64_t chunk = metrics_detail::kChunk;
  plant(1 * chunk + 100, ga, ta);     // A, fp32-lane block
  plant(3 * chunk + 7000, gb, tb);    // B, fp32-lane block (the third of a span of four)
  plant(4 * chunk + 7, gb, tb);       // B, fp64 block (the NaN below), later
  g[4 * chunk + 9] = t[4 * chunk + 9] = kNan;
  auto reference = [&](int64_t& ad_at, int64_t& rel_at) {
    double ad_max = -1, rel_max = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(g[i])) continue;
      const double tr = round_bf16(t[i]), ad = std::fabs(tr - g[i]);
      if (ad > ad_max) ad_max = ad, ad_at = i;
      if (ad / std::fabs(g[i]) > rel_max) rel_max = ad / std::fabs(g[i]), rel_at = i;
    }
    return rel_max;
  };
  for (bool earlier_fp64_block : {false, true}) {
    if (earlier_fp64_block) {  // B also in a fp64 block before the fp32-lane one: that one is first
      plant(2 * chunk + 3, gb, tb);
      g[2 * chunk + 1000] = t[2 * chunk + 1000] = kNan;
    }
    int64_t ad_at = -1, rel_at = -1;
    const double rel_max = reference(ad_at, rel_at);
    ASSERT_EQ(rel_max, (gb - tb) / gb);
    ASSERT_EQ(rel_at, earlier_fp64_block ? 2 * chunk + 3 : 3 * chunk + 7000);
    for (int threads : {1, 2}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + (earlier_fp64_block ? ", B in an earlier fp64 block" : ""));
      MetricOptions o;
      o.threads = threads;
      const PairMetrics m = run(half_like(DType::kBF16, g), half_like(DType::kBF16, t), o);
      EXPECT_EQ(m.max_rel, rel_max);
      EXPECT_EQ(m.max_rel_index, rel_at);
      EXPECT_EQ(m.max_abs_index, ad_at);
    }
  }
}

TEST(Metrics, KernelVariantsAgreeBitForBit) {
  using namespace metrics_detail;
  auto g = random_floats(kBlock + 4, 3, 1e-3f), t = random_floats(kBlock + 4, 4, 1e-3f);
  std::vector<double> gd(g.begin(), g.end()), td(t.begin(), t.end());
  gd[10] = 0;
  td[11] = NAN;
  gd[12] = INFINITY;
  td[12] = INFINITY;
  td[13] = 0;
  gd[13] = 1e-6;
  KernelParams p;
  p.rel_epsilon = 0x1p-52;
  p.min_normal_t = 0x1p-14;
  p.ftz_tiny = 0x1p-14;
  p.ulp_mode = UlpMode::kPow2;
  p.ulp_pow2_base = uint64_t{2046 + 10} << 52;
  p.ulp_sub = 0x1p24;
  int variants = 0;
  for (BlockFn fast : {block_kernel_avx2(), block_kernel_avx512()}) {
    if (fast == nullptr) continue;
    if (fast == block_kernel_avx2() && !__builtin_cpu_supports("avx2")) continue;
    if (fast == block_kernel_avx512() && !__builtin_cpu_supports("avx512vl")) continue;
    ++variants;
    Partial a, b;
    for (int64_t n : {int64_t{1}, int64_t{7}, kBlock}) {
      for (int64_t i = n; i < ((n + 3) & ~3); ++i) gd[i] = td[i] = NAN;
      block_kernel_generic()(gd.data(), td.data(), n, p, a);
      fast(gd.data(), td.data(), n, p, b);
      for (auto [x, y] : {std::pair{a.sum_d2, b.sum_d2}, {a.sum_ad, b.sum_ad}, {a.sum_tg, b.sum_tg},
                          {a.sum_gg, b.sum_gg}, {a.sum_tt, b.sum_tt}, {a.sum_ulp, b.sum_ulp}, {a.max_ulp, b.max_ulp},
                          {a.max_rel, b.max_rel}, {a.g.mean, b.g.mean}, {a.t.m2, b.t.m2}, {a.g.sumsq, b.g.sumsq}}) {
        EXPECT_TRUE(same_bits(x, y)) << x << " vs " << y;
      }
      EXPECT_EQ(a.both, b.both);
      EXPECT_EQ(a.mismatch, b.mismatch);
      EXPECT_EQ(a.ftz, b.ftz);
      EXPECT_EQ(a.rel_lt_1e3, b.rel_lt_1e3);
    }
  }
  if (variants == 0) GTEST_SKIP() << "no vector variant runs here";
}

TEST(Metrics, LayoutAndByteOrderDoNotChangeResults) {
  // A 3x4 matrix stored in Fortran order, and byte-swapped, gives the same metrics as C order.
  const std::vector<float> c = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<float> fortran(12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) fortran[j * 3 + i] = c[i * 4 + j];
  TensorView fv = f32(fortran, {3, 4});
  fv.strides = {1, 3};
  std::vector<float> swapped = c;
  for (auto& x : swapped) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u = __builtin_bswap32(u);
    std::memcpy(&x, &u, 4);
  }
  TensorView sv = f32(swapped, {3, 4});
  sv.byteswapped = true;
  const std::vector<float> t = {1, 2, 3, 4, 5, 6, 7, 9, 9, 10, 11, 12};
  const PairMetrics ref = run(f32(c, {3, 4}), f32(t, {3, 4}));
  EXPECT_EQ(ref.max_abs_index, 7);
  expect_identical(ref, run(fv, f32(t, {3, 4})));
  expect_identical(ref, run(sv, f32(t, {3, 4})));
}

TEST(Metrics, SumsDoNotDriftWithSize) {
  // 2^23 + 3 copies of 0.1f against 0.1f·(1 + 2^-20): a running fp64 sum would be off by ~1e-9
  // relative here; the pairwise tree must stay within a few ulps.
  const size_t n = (size_t{1} << 23) + 3;
  const float gv = 0.1f, tv = static_cast<float>(0.1 * (1 + 0x1p-20));
  std::vector<float> g(n, gv), t(n, tv);
  const PairMetrics m = run(f32(g), f32(t));
  const double dn = static_cast<double>(n), d = static_cast<double>(tv) - static_cast<double>(gv);
  EXPECT_NEAR(m.golden.mean / gv - 1, 0.0, 1e-14);
  EXPECT_NEAR(m.golden.l2norm / (std::sqrt(dn) * gv) - 1, 0.0, 1e-14);
  EXPECT_NEAR(m.euclidean / (std::sqrt(dn) * d) - 1, 0.0, 1e-14);
  EXPECT_NEAR(m.mean_abs / d - 1, 0.0, 1e-14);
  EXPECT_NEAR(m.cosine - 1, 0.0, 1e-14);
  EXPECT_EQ(m.golden.std, 0.0);
}

// Kahan-compensated long double sum: error ~1e-19 relative, far below the bounds tested below.
struct KahanLd {
  long double s = 0, c = 0;
  void add(long double x) {
    const long double y = x - c, n = s + y;
    c = (n - s) - y;
    s = n;
  }
};

// The bounds documented in docs/metrics.md "Error bounds of the kernel": for N elements the sums
// carry at most (k + 3)·u·Σ|terms|, k = 255 + 2 + 6 + ⌈log2 chunks⌉, u = 2^-53. Checked on random
// fp32 data of mixed magnitudes (1e-3 relative perturbation, some sign changes) against sums in
// compensated long double.
TEST(Metrics, DocumentedErrorBoundsHold) {
  using metrics_detail::kChunk;
  const size_t n = (size_t{1} << 20) + 5;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_real_distribution<double> ex(-8.0, 8.0);
  std::vector<float> g(n), t(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = static_cast<float>(nd(rng) * std::exp2(ex(rng)));
    t[i] = static_cast<float>(g[i] * (1 + 1e-3 * nd(rng)) + (i % 97 == 0 ? 1e-3 : 0.0));
  }
  KahanLd d2, ad, tg, gg, tt;
  for (size_t i = 0; i < n; ++i) {
    const long double gl = g[i], tl = t[i], dl = tl - gl;  // exact in long double (64-bit significand)
    d2.add(dl * dl);
    ad.add(std::fabs(dl));
    tg.add(tl * gl);
    gg.add(gl * gl);
    tt.add(tl * tl);
  }
  const int64_t chunks = (static_cast<int64_t>(n) + kChunk - 1) / kChunk;
  const double gamma = (255 + 2 + 6 + std::ceil(std::log2(static_cast<double>(chunks))) + 3) * 0x1p-53;
  const PairMetrics m = run(f32(g), f32(t));
  auto rel = [](double x, long double ref) { return static_cast<double>(std::fabs((x - ref) / ref)); };
  EXPECT_LE(rel(m.euclidean, std::sqrt(d2.s)), gamma / 2 + 0x1p-53);
  EXPECT_LE(rel(m.mean_abs, ad.s / n), gamma + 0x1p-52);
  EXPECT_LE(rel(m.golden.l2norm, std::sqrt(gg.s)), gamma / 2 + 0x1p-53);
  EXPECT_LE(rel(m.rel_l2, std::sqrt(d2.s / gg.s)), gamma + 0x1p-51);
  const long double cos_ref = tg.s / std::sqrt(tt.s * gg.s);
  EXPECT_LE(std::fabs(m.cosine - static_cast<double>(cos_ref)), 2 * gamma + 0x1p-51);
  // 1 − cosine is only known to that absolute error, not relative to itself (docs/metrics.md).
  EXPECT_GT(1 - static_cast<double>(cos_ref), 1e-8);
}

// The bounds of docs/metrics.md "Error bounds of the kernel" for bf16 × bf16, end to end, whichever
// kernel variant this machine runs (the fp32-sum one on AVX-512 is the loosest): every sum within
// δ = 16·2⁻²⁴ of Σ|terms|; 1 − cos within 5δ·Σd²/(2‖g‖‖t‖) where Σd² < 0.8‖g‖‖t‖ (the cosine from the
// difference), cos within 2δ elsewhere; std within 3δ. Three pairs a user meets: bf16 rounding noise,
// a target scaled by 1 % (1 − cos ≈ 0 though Σd² is not), and a target 2⁻¹⁰ the golden's size.
TEST(Metrics, Bf16BoundsHoldEndToEnd) {
  const size_t n = (size_t{1} << 20) + 32;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_real_distribution<double> ex(-4.0, 4.0);
  std::vector<double> g(n);
  for (double& x : g) x = nd(rng) * std::exp2(ex(rng));
  const TensorView gv = half_like(DType::kBF16, g);
  std::vector<double> gx(n);
  decode_to_double(gv, 0, static_cast<int64_t>(n), gx.data());
  const double delta = kLaneDelta, u = 0x1p-53;
  for (int kind = 0; kind < 3; ++kind) {
    std::vector<double> t(n);
    for (size_t i = 0; i < n; ++i) {
      t[i] = kind == 0 ? gx[i] * (1 + 0x1p-8 * nd(rng)) : kind == 1 ? gx[i] * 1.01 : gx[i] * 0x1p-10 * (1 + 0.1 * nd(rng));
    }
    const TensorView tv = half_like(DType::kBF16, t);
    std::vector<double> tx(n);
    decode_to_double(tv, 0, static_cast<int64_t>(n), tx.data());
    KahanLd d2, ad, tg, gg, tt, sg;
    for (size_t i = 0; i < n; ++i) {
      const long double gl = gx[i], tl = tx[i], dl = tl - gl;
      d2.add(dl * dl);
      ad.add(std::fabs(dl));
      tg.add(tl * gl);
      gg.add(gl * gl);
      tt.add(tl * tl);
      sg.add(gl);
    }
    const PairMetrics m = run(gv, tv);
    auto rel = [](double x, long double ref) { return static_cast<double>(std::fabs((x - ref) / ref)); };
    SCOPED_TRACE("kind " + std::to_string(kind));
    EXPECT_LE(rel(m.euclidean, std::sqrt(d2.s)), delta / 2 + 4 * u);
    EXPECT_LE(rel(m.mean_abs, ad.s / n), delta + 4 * u);
    EXPECT_LE(rel(m.golden.l2norm, std::sqrt(gg.s)), delta / 2 + 4 * u);
    EXPECT_LE(rel(m.rel_l2, std::sqrt(d2.s / gg.s)), delta + 8 * u);
    const long double mean = sg.s / n, var = gg.s / n - mean * mean;
    EXPECT_LE(std::fabs(m.golden.mean - static_cast<double>(mean)), delta * std::sqrt(static_cast<double>(gg.s / n)));
    EXPECT_LE(rel(m.golden.std, std::sqrt(var)), 3 * delta + 1e-9);
    const long double norms = std::sqrt(gg.s * tt.s), one_minus_cos = 1 - tg.s / norms;
    if (d2.s < 0.8L * norms) {
      const double bound = 5 * delta * static_cast<double>(d2.s / (2 * norms)) + 4 * u;
      EXPECT_LE(std::fabs((1 - m.cosine) - static_cast<double>(one_minus_cos)), bound)
          << "1 - cos " << 1 - m.cosine << " vs " << static_cast<double>(one_minus_cos);
    } else {
      EXPECT_LE(std::fabs(m.cosine - static_cast<double>(1 - one_minus_cos)), 2 * delta + 4 * u);
    }
    if (kind == 0) {
      EXPECT_GT(static_cast<double>(one_minus_cos), 1e-7);  // 1 − cos of bf16 noise: ~1e-5
    }
  }
}

TEST(Metrics, SoftmaxKlHandComputed) {
  // Row 0: p = (1/2, 1/2), q = (3/4, 1/4): KL = ½·ln(2/3) + ½·ln 2 = ½·ln(4/3).
  // Row 1: NaN in the target → skipped and counted.
  // Row 2: golden −Inf masks a token (p = 0): contributes nothing; identical otherwise → 0.
  MetricOptions o;
  o.kl = true;
  const PairMetrics m = run(make<double>(DType::kF64, {0, 0, 1, 2, -INFINITY, 5}, {3, 2}),
                           make<double>(DType::kF64, {std::log(3.0), 0, 1, kNan, -INFINITY, 5}, {3, 2}), o);
  ASSERT_TRUE(m.kl_computed);
  EXPECT_EQ(m.kl_rows, 2);
  EXPECT_EQ(m.kl_rows_skipped, 1);
  EXPECT_NEAR(m.kl, 0.5 * std::log(4.0 / 3.0) / 2.0, 1e-15);
}

TEST(Metrics, SoftmaxKlTargetMaskingAGoldenTokenIsInfinite) {
  MetricOptions o;
  o.kl = true;
  const PairMetrics m = run(f64({0, 0}), f64({0, -INFINITY}), o);
  EXPECT_EQ(m.kl, kInf);
}

TEST(Metrics, BadOptionsAreErrors) {
  MetricOptions o;
  o.rel_epsilon = 0;
  EXPECT_FALSE(compare_tensors(f32({1}), f32({1}), o).ok());
  o = {};
  o.ftz_tiny = -1;
  EXPECT_FALSE(compare_tensors(f32({1}), f32({1}), o).ok());
}

}  // namespace
}  // namespace parity

namespace parity {
namespace {

// compare_updates: ‖(t1 − t0) − (g1 − g0)‖ / ‖g1 − g0‖, by hand.
TEST(UpdateMetrics, RelativeDifferenceOfTheTwoUpdates) {
  const TensorView g0 = f32({1, 2, 3, 4}), g1 = f32({1.5f, 2, 3, 4});    // golden update (0.5, 0, 0, 0)
  const TensorView t0 = f32({1, 2, 3, 4}), t1 = f32({2.0f, 2, 3, 4.5f});  // target update (1, 0, 0, 0.5)
  Result<UpdateMetrics> m = compare_updates(g0, g1, t0, t1);
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(m->golden_norm, 0.5);
  EXPECT_DOUBLE_EQ(m->diff_norm, std::sqrt(0.5));           // (0.5, 0, 0, 0.5)
  EXPECT_DOUBLE_EQ(m->rel_error, std::sqrt(0.5) / 0.5);
}

// The element counts behind UPDATE_LOST_TO_ROUNDING: a bf16 weight at 1.0 (spacing 2^-7 above, 2^-8 below)
// keeps its value under a step of 1e-3, and a step of 2^-7 moves it; an fp32 golden moves under both.
TEST(UpdateMetrics, CountsStepsThatRoundToNothingInTheTargetsDtype) {
  const TensorView g0 = f32({1, 1, 1, 1, 1}), g1 = f32({1.001f, 0.999f, 1 + 0x1p-7f, 1, 1.001f});
  const TensorView t0 = half_like(DType::kBF16, {1, 1, 1, 1, 1});
  const TensorView t1 = half_like(DType::kBF16, {1, 1, 1 + 0x1p-7, 1, 1 + 0x1p-7});
  Result<UpdateMetrics> m = compare_updates(g0, g1, t0, t1);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->moved, 4);    // element 3 stays in the golden too
  EXPECT_EQ(m->stalled, 2);  // elements 0 and 1; elements 2 and 4 moved in the target
  EXPECT_EQ(m->lost, 2);     // ±1e-3 at 1.0 is below half of bf16's spacing either way
  // An fp32 target that stands still has no step lost to its dtype: the cause is elsewhere.
  const TensorView still = f32({1, 1, 1, 1, 1});
  Result<UpdateMetrics> f = compare_updates(g0, g1, still, still);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->stalled, 4);
  EXPECT_EQ(f->lost, 0);
}

TEST(UpdateMetrics, NoUpdateOnEitherSideIsZeroAndOnlyTheTargetsIsInfinite) {
  const TensorView p = f32({1, 2, 3});
  EXPECT_EQ(compare_updates(p, p, p, p)->rel_error, 0.0);
  const TensorView moved = f32({1, 2, 4});
  EXPECT_TRUE(std::isinf(compare_updates(p, p, p, moved)->rel_error));
}

TEST(UpdateMetrics, LongTensorsSpanBlocksAndNonFiniteGivesNaN) {
  std::vector<float> a(10000), b(10000);
  for (size_t i = 0; i < a.size(); ++i) { a[i] = static_cast<float>(i); b[i] = a[i] + 1.0f; }
  const TensorView v0 = f32(a), v1 = f32(b);
  Result<UpdateMetrics> same = compare_updates(v0, v1, v0, v1);
  EXPECT_EQ(same->rel_error, 0.0);
  EXPECT_DOUBLE_EQ(same->golden_norm, 100.0);  // sqrt(10000 · 1²)
  b[7] = std::numeric_limits<float>::quiet_NaN();
  const TensorView bad = f32(b);
  EXPECT_TRUE(std::isnan(compare_updates(v0, v1, v0, bad)->rel_error));
  EXPECT_FALSE(compare_updates(v0, v1, v0, f32({1, 2})).ok());
}

}  // namespace
}  // namespace parity
