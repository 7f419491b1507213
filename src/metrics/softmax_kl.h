// Softmax KL divergence along the last dimension (the logits metric of seed 000 and llama.cpp).
#pragma once

#include <cstdint>

#include "parity/metrics.h"

namespace parity::metrics_detail {

// Sets m.kl, m.kl_computed, m.kl_rows, m.kl_rows_skipped. Rows are the slices along the last
// dimension (a 0-d or 1-d tensor is one row). Per row: softmax_row_kl, with parity's one KL row policy
// (parity/metrics.h: rows without a distribution on either side are skipped and counted); m.kl is the
// KlAccumulator's pairwise mean over the other rows (NaN if none).
Status softmax_kl(const TensorView& golden, const TensorView& target, int threads, PairMetrics& m);

// Pairwise sum of x[0..n): short sequential runs combined as a tree (error O(log n · eps)).
double pairwise_sum(const double* x, int64_t n);

}  // namespace parity::metrics_detail
