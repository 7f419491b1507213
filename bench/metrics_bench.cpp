// compare_tensors on in-memory tensors (no file I/O): the kernel's own throughput, reported as input
// bytes per second (both tensors), for fp32/fp32, fp32/bf16 and bf16/bf16 pairs and for a small pair.
//   build-dir/bench/metrics_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "metrics/block_kernel.h"
#include "parity/metrics.h"

namespace {

parity::TensorView random_tensor(parity::DType dt, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0.0, 1.0);
  const int size = parity::dtype_size(dt);
  std::vector<std::byte> bytes(static_cast<size_t>(n * size));
  for (int64_t i = 0; i < n; ++i) {
    const double x = d(rng);
    if (dt == parity::DType::kF32) {
      const float f = static_cast<float>(x);
      std::memcpy(bytes.data() + i * 4, &f, 4);
    } else {
      const uint64_t bits = parity::encode_rne(dt, x);
      std::memcpy(bytes.data() + i * size, &bits, static_cast<size_t>(size));
    }
  }
  return parity::make_owned_tensor(dt, {n}, std::move(bytes));
}

void run(benchmark::State& state, parity::DType gd, parity::DType td) {
  const int64_t n = state.range(0);
  const parity::TensorView g = random_tensor(gd, n, 1), t = random_tensor(td, n, 2);
  for (auto _ : state) {
    auto r = parity::compare_tensors(g, t);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(state.iterations() * (g.nbytes() + t.nbytes()));
  state.SetLabel(parity::metrics_detail::block_kernel_name());
}

void BM_F32_F32(benchmark::State& s) { run(s, parity::DType::kF32, parity::DType::kF32); }
void BM_F32_BF16(benchmark::State& s) { run(s, parity::DType::kF32, parity::DType::kBF16); }
void BM_BF16_BF16(benchmark::State& s) { run(s, parity::DType::kBF16, parity::DType::kBF16); }

}  // namespace

// ---- the floor of an accurate bf16 × bf16 kernel (docs/benchmarks.md "Why bf16 stays at ~15 %") ----
// Two loops over the same pair of bf16 arrays, too large for the caches: read-and-sum (64-bit adds of
// every word, what bench/readsum_bench measures from files) and the seven fp64 sums an accurate kernel
// cannot do without — Σd², Σ|d|, Σtg, Σg², Σt², Σg, Σt of the pair widened to fp64, nothing else (no
// counts, maxima, ULP error or relative error). If the second alone takes more than twice the first,
// no kernel that keeps fp64 sums reaches 50 % of read-and-sum.
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

// GCC 12's AVX-512 headers build some results from an undefined vector: a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace {

std::vector<uint16_t> random_bf16(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<uint16_t> v(static_cast<size_t>(n));
  for (auto& x : v) {
    const float f = d(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    x = static_cast<uint16_t>(bits >> 16);
  }
  return v;
}

__attribute__((target("avx512f"))) uint64_t read_and_sum(const uint16_t* g, const uint16_t* t, int64_t n) {
  __m512i acc0 = _mm512_setzero_si512(), acc1 = _mm512_setzero_si512();
  for (int64_t i = 0; i < n; i += 32) {
    acc0 = _mm512_add_epi64(acc0, _mm512_loadu_si512(g + i));
    acc1 = _mm512_add_epi64(acc1, _mm512_loadu_si512(t + i));
  }
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(_mm512_add_epi64(acc0, acc1)));
}

// Each half of the 16 widened pairs has its own accumulators (14 chains), so the loop is bound by the
// vector units' throughput, not by the latency of a chain of FMAs.
__attribute__((target("avx512f,avx512dq"))) double seven_fp64_sums(const uint16_t* g, const uint16_t* t, int64_t n) {
  __m512d acc[2][7];
  for (auto& half : acc)
    for (auto& a : half) a = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 gf = _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + i))), 16));
    const __m512 tf = _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + i))), 16));
    for (int h = 0; h < 2; ++h) {
      __m512d* a = acc[h];
      const __m512d g8 = _mm512_cvtps_pd(h ? _mm512_extractf32x8_ps(gf, 1) : _mm512_castps512_ps256(gf));
      const __m512d t8 = _mm512_cvtps_pd(h ? _mm512_extractf32x8_ps(tf, 1) : _mm512_castps512_ps256(tf));
      const __m512d d = _mm512_sub_pd(t8, g8);
      a[0] = _mm512_fmadd_pd(d, d, a[0]);            // Σd²
      a[1] = _mm512_add_pd(a[1], _mm512_abs_pd(d));  // Σ|d|
      a[2] = _mm512_fmadd_pd(t8, g8, a[2]);          // Σtg
      a[3] = _mm512_fmadd_pd(g8, g8, a[3]);          // Σg²
      a[4] = _mm512_fmadd_pd(t8, t8, a[4]);          // Σt²
      a[5] = _mm512_add_pd(a[5], g8);                // Σg
      a[6] = _mm512_add_pd(a[6], t8);                // Σt
    }
  }
  double total = 0;
  for (auto& half : acc)
    for (auto& a : half) total += _mm512_reduce_add_pd(a);
  return total;
}

template <bool kSums>
void floor_bench(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq")) {
    state.SkipWithError("needs AVX-512F/DQ");
    return;
  }
  const int64_t n = state.range(0);
  const std::vector<uint16_t> g = random_bf16(n, 1), t = random_bf16(n, 2);
  for (auto _ : state) {
    if constexpr (kSums) {
      benchmark::DoNotOptimize(seven_fp64_sums(g.data(), t.data(), n));
    } else {
      benchmark::DoNotOptimize(read_and_sum(g.data(), t.data(), n));
    }
  }
  state.SetBytesProcessed(state.iterations() * n * 4);
}

void BM_BF16_Floor_ReadAndSum(benchmark::State& s) { floor_bench<false>(s); }
void BM_BF16_Floor_SevenFp64Sums(benchmark::State& s) { floor_bench<true>(s); }

}  // namespace

BENCHMARK(BM_BF16_Floor_ReadAndSum)->Arg(1 << 26)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BF16_Floor_SevenFp64Sums)->Arg(1 << 26)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BF16_BF16)->Arg(1 << 26)->UseRealTime()->Unit(benchmark::kMillisecond);
#endif

BENCHMARK(BM_F32_F32)->Arg(4096)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_F32_BF16)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BF16_BF16)->Arg(4096)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
