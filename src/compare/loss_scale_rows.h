// compare/loss_scale_rows.h — which rows of a comparison are compared after unscaling the target
// (parity/loss_scale.h, docs/judgement.md "Loss scaling").
#pragma once

#include <cstdint>
#include <vector>

#include "parity/compare.h"
#include "parity/loss_scale.h"

namespace parity::compare {

// The recognised loss scales of planned rows, one per (rank, step) whose backward rows share a power of
// two (shared_power_of_two over the rows' stored norms, in execution order), with each side's recorded
// scaling op of that (rank, step). Rows without stored statistics on both sides give no evidence.
std::vector<LossScale> detect_loss_scales(const RowList& rows, const RecordSource& golden, const RecordSource& target);

// The k a row of a scaled (rank, step) is compared at: k for backward rows; for the scaling op's own rows,
// k for its product when the two sides' recorded factors differ by 2^k and for the gradient it passes to
// the loss, 0 for the rest (its inputs; the gradient arriving at the product, 1 on both sides).
int row_loss_scale_log2(const CompareRow& row, const LossScale& scale);

// Sets CompareRow::loss_scale_log2 on the tensor and statistics rows of scaled (rank, step)s; returns how
// many rows are compared unscaled.
int64_t mark_loss_scaled_rows(RowList& rows, const std::vector<LossScale>& scales);

}  // namespace parity::compare
