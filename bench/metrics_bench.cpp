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

BENCHMARK(BM_F32_F32)->Arg(4096)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_F32_BF16)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BF16_BF16)->Arg(4096)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
