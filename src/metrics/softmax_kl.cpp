// Softmax KL along the last dimension; see softmax_kl.h for the definition.
#include "metrics/softmax_kl.h"

#include <omp.h>

#include <cmath>
#include <limits>
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

namespace {

// KL of one row, or NaN when the row is skipped (see softmax_kl.h). `terms` is scratch of size n.
double row_kl(const double* g, const double* t, int64_t n, double* terms) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double mg = -kInf, mt = -kInf;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(g[i]) || std::isnan(t[i]) || g[i] == kInf || t[i] == kInf) return std::nan("");
    mg = g[i] > mg ? g[i] : mg;
    mt = t[i] > mt ? t[i] : mt;
  }
  if (mg == -kInf || mt == -kInf) return std::nan("");  // softmax of an all −Inf row is undefined
  for (int64_t i = 0; i < n; ++i) terms[i] = std::exp(g[i] - mg);
  const double lg = std::log(pairwise_sum(terms, n));
  for (int64_t i = 0; i < n; ++i) terms[i] = std::exp(t[i] - mt);
  const double lt = std::log(pairwise_sum(terms, n));
  for (int64_t i = 0; i < n; ++i) {
    if (g[i] == -kInf) {
      terms[i] = 0.0;  // p_i = 0 contributes nothing, whatever q_i is
      continue;
    }
    const double logp = (g[i] - mg) - lg;
    const double logq = (t[i] - mt) - lt;  // −Inf where the target masked a golden-possible token
    terms[i] = std::exp(logp) * (logp - logq);
  }
  return pairwise_sum(terms, n);
}

}  // namespace

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
      row_values[static_cast<size_t>(r)] = row_kl(gb.data(), tb.data(), cols, terms.data());
    }
  }
  // Keep the used rows, in order, and average them with a pairwise sum.
  int64_t used = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double v = row_values[static_cast<size_t>(r)];
    if (std::isnan(v)) continue;
    row_values[static_cast<size_t>(used++)] = v;
  }
  m.kl_rows = used;
  m.kl_rows_skipped = rows - used;
  if (used > 0) m.kl = pairwise_sum(row_values.data(), used) / static_cast<double>(used);
  return Status::OK();
}

}  // namespace parity::metrics_detail
