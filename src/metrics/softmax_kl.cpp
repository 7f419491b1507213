// Softmax KL along the last dimension; see softmax_kl.h for the definition.
#include "metrics/softmax_kl.h"

#include <omp.h>

#include <cmath>
#include <vector>

namespace parity::metrics_detail {

double pairwise_sum(const double* x, int64_t n) {
  if (n <= 32) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += x[i];
    return s;
  }
  const int64_t half = n / 2;
  return pairwise_sum(x, half) + pairwise_sum(x + half, n - half);
}

Status softmax_kl(const TensorView& golden, const TensorView& target, int threads, PairMetrics& m) {
  m.kl_computed = true;
  m.kl = std::nan("");
  m.kl_rows = 0;
  m.kl_rows_skipped = 0;
  const int64_t numel = golden.numel;
  if (numel == 0) return Status::OK();
  const int64_t cols = golden.shape.empty() ? numel : golden.shape.back();
  if (cols <= 0 || numel % cols != 0) {
    return Status::Invalid("softmax KL: last dimension " + std::to_string(cols) + " does not divide " +
                           std::to_string(numel) + " elements");
  }
  const int64_t rows = numel / cols;
  std::vector<double> row_values(static_cast<size_t>(rows));
  const bool parallel = threads > 1 && rows > 1 && numel >= (int64_t{1} << 16);
#pragma omp parallel num_threads(threads) if (parallel)
  {
    std::vector<double> gb(static_cast<size_t>(cols)), tb(static_cast<size_t>(cols)), terms(static_cast<size_t>(cols));
#pragma omp for schedule(dynamic, 16)
    for (int64_t r = 0; r < rows; ++r) {
      decode_to_double(golden, r * cols, cols, gb.data());
      decode_to_double(target, r * cols, cols, tb.data());
      row_values[static_cast<size_t>(r)] = softmax_row_kl(gb.data(), tb.data(), cols, terms.data());
    }
  }
  // The rows in order, through the one KL accumulator: skipped rows (NaN) counted, the others averaged
  // with a pairwise sum.
  KlAccumulator acc;
  acc.add_rows(row_values.data(), rows);
  const KlSummary kl = acc.finish();
  m.kl_rows = kl.count;
  m.kl_rows_skipped = kl.skipped;
  m.kl = kl.mean;
  return Status::OK();
}

}  // namespace parity::metrics_detail
