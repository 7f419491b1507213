// The one KL row policy and accumulator of parity (include/parity/metrics.h, docs/metrics.md
// "KL divergence"): compare's logits rows, eval ppl's tokens and scan's per-token KL all go through here.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "metrics/softmax_kl.h"
#include "parity/metrics.h"

namespace parity {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

bool kl_row_has_distribution(const double* x, int64_t n) {
  bool some_mass = false;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i]) || x[i] == kInf) return false;
    some_mass = some_mass || x[i] != -kInf;
  }
  return some_mass;
}

KlSkip kl_row_skip(const double* golden, const double* target, int64_t n) {
  if (!kl_row_has_distribution(golden, n)) return KlSkip::kGolden;
  if (!kl_row_has_distribution(target, n)) return KlSkip::kTarget;
  return KlSkip::kNone;
}

double softmax_row_kl(const double* g, const double* t, int64_t n, double* terms) {
  using metrics_detail::pairwise_sum;
  if (kl_row_skip(g, t, n) != KlSkip::kNone) return std::nan("");
  const double mg = *std::max_element(g, g + n), mt = *std::max_element(t, t + n);
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

KlSummary kl_of_rows(const double* golden, const double* target, int64_t rows, int64_t cols, int threads,
                     double* kl_out, KlSkip* skip_out) {
  if (threads <= 0) threads = omp_get_max_threads();
  const bool parallel = threads > 1 && rows > 1 && rows * cols >= (int64_t{1} << 16);
#pragma omp parallel num_threads(threads) if (parallel)
  {
    std::vector<double> scratch(static_cast<size_t>(cols));
#pragma omp for schedule(dynamic, 16)
    for (int64_t r = 0; r < rows; ++r) {
      const double* g = golden + r * cols;
      const double* t = target + r * cols;
      skip_out[r] = kl_row_skip(g, t, cols);
      kl_out[r] = softmax_row_kl(g, t, cols, scratch.data());
    }
  }
  KlAccumulator acc;
  for (int64_t r = 0; r < rows; ++r) acc.add(kl_out[r], skip_out[r]);
  return acc.finish();
}

MeanUnc llama_mean_and_uncertainty(double sum, double sum2, int64_t count) {
  // llama.cpp: f = Σx/n; df = Σx²/n − f²; unc = sqrt(df/(n−1)) when df > 0 and n > 10, else 0.
  if (count < 1) return {0.0, 0.0};
  const double f = sum / count;
  double df = sum2 / count - f * f;
  df = (df > 0 && count > 10) ? std::sqrt(df / (count - 1)) : 0.0;
  return {f, df};
}

void KlAccumulator::note_skip(KlSkip skip) {
  ++skipped_;
  skipped_target_ += skip == KlSkip::kTarget;
}

void KlAccumulator::add_sums(double s, double s2, int64_t used) {
  // The first block is assigned, not added to 0.0, so a single block's sum is exactly its pairwise sum.
  sum_ = count_ == 0 ? s : sum_ + s;
  sum2_ = count_ == 0 ? s2 : sum2_ + s2;
  count_ += used;
}

void KlAccumulator::add(double kl, KlSkip skip) {
  if (std::isnan(kl) || skip != KlSkip::kNone) {
    note_skip(skip);
    return;
  }
  add_sums(kl, kl * kl, 1);
  max_ = std::isnan(max_) ? kl : std::max(max_, kl);
}

void KlAccumulator::add_rows(const double* kl, int64_t n) {
  std::vector<double> used, squares;
  used.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(kl[i])) {
      note_skip(KlSkip::kNone);  // a bare value does not say whose distribution was missing
      continue;
    }
    used.push_back(kl[i]);
    max_ = std::isnan(max_) ? kl[i] : std::max(max_, kl[i]);
  }
  if (used.empty()) return;
  squares.reserve(used.size());
  for (double v : used) squares.push_back(v * v);
  const auto m = static_cast<int64_t>(used.size());
  add_sums(metrics_detail::pairwise_sum(used.data(), m), metrics_detail::pairwise_sum(squares.data(), m), m);
}

KlSummary KlAccumulator::finish() const {
  KlSummary s;
  s.count = count_;
  s.skipped = skipped_;
  s.skipped_target = skipped_target_;
  s.max = max_;
  if (count_ == 0) return s;
  const MeanUnc mu = llama_mean_and_uncertainty(sum_, sum2_, count_);
  s.mean = mu.mean;
  s.unc = mu.unc;
  return s;
}

}  // namespace parity
