// parity/loss_scale.h — a backward pass run on a scaled loss, recognised and undone before comparing.
//
// Mixed-precision training multiplies the loss by a power of two S = 2^s before backward() (what
// torch.amp.GradScaler does, or `(loss * 4096).backward()`), so every gradient of that step is S times
// the unscaled one; the optimizer divides it out later. A golden run without scaling (or with another
// scale) then differs in every backward record by exactly 2^k, k = s_target − s_golden. run_compare
// recognises such a (rank, step) from the backward records themselves (shared_power_of_two below), with
// the recorded scaling op as corroborating evidence, and compares its backward rows with the target
// multiplied by 2^-k — exact in floating point. The rule and its reasons: docs/judgement.md "Loss scaling".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "parity/metrics.h"  // kNaN
#include "parity/source.h"

namespace parity {

// The detection rule's constants (docs/judgement.md "Loss scaling").
inline constexpr double kLossScaleTolerance = 0.1;  // |log2(‖t‖/‖g‖) − k| for a row to be "at" 2^k
inline constexpr double kLossScaleMajority = 0.6;   // share of the measured backward rows at 2^k
inline constexpr int64_t kLossScaleMinRows = 3;     // fewer measured rows say nothing
inline constexpr int kLossScaleMaxLog2 = 64;        // |k| beyond this is no loss scale (fp32 spans 2^±126)

// What the backward rows of one (rank, step) say: k, and how many rows share it.
struct ScaleEvidence {
  int log2_ratio = 0;          // k: the target's backward values are the golden's × 2^k
  int64_t rows_at_ratio = 0;   // N: rows with |log2(‖t‖/‖g‖) − k| ≤ kLossScaleTolerance
  int64_t rows_measured = 0;   // M: rows with finite, non-zero norms on both sides
  double median = kNaN;        // median of log2(‖t‖/‖g‖) over the M rows
  double max_deviation = 0;    // largest |log2(‖t‖/‖g‖) − k| among the N rows
};

// The rule, on the log2(‖t‖₂/‖g‖₂) of one (rank, step)'s measured backward rows in execution order:
// a scale 2^k (k ≠ 0, |k| ≤ kLossScaleMaxLog2) when
//   1. at least kLossScaleMinRows rows are measured;
//   2. their median lies within kLossScaleTolerance of the non-zero integer k;
//   3. at least kLossScaleMajority of them lie within kLossScaleTolerance of k (a fault that halves one
//      layer's gradients moves only the rows of that layer and those below it);
//   4. the first row in execution order — the gradient nearest the loss — is at 2^k: a loss scale
//      multiplies the gradient before the first backward op, so it is there from the start, while a fault
//      in the middle of the network leaves the rows above it at 2^0.
// std::nullopt otherwise.
std::optional<ScaleEvidence> shared_power_of_two(const std::vector<double>& log2_ratios_in_order);

// A recorded op that scales the loss: a `mul` outside the model (`<global>`) of a one-element tensor by a
// power of two — a number argument (`loss * 4096`) or a one-element tensor holding it (GradScaler's
// `outputs * self._scale`), read from the op's recorded arguments and input statistics.
struct LossScaleOp {
  std::string event;    // "<global>/mul#0"
  double factor = kNaN;  // 4096
};

// The recognised loss scale of one (rank, step): the target's backward rows are compared × 2^-k.
struct LossScale {
  int rank = -1;
  int64_t step = -1;
  ScaleEvidence evidence;
  // The scaling ops each side recorded in this (rank, step), when it recorded one (op and mix levels).
  std::optional<LossScaleOp> golden_op, target_op;
};

// The loss-scaling ops a source recorded (one a (rank, step) at most: the first in execution order), each
// with the rank and step of its record.
struct RecordedLossScaleOp {
  int rank = -1;
  int64_t step = -1;
  LossScaleOp op;
};
std::vector<RecordedLossScaleOp> find_loss_scale_ops(const RecordSource& source);

// Whether a record is part of how a side scales its loss in a recognised scaled (rank, step): a record of
// its recorded scaling op, or, where one was recorded, of torch.amp.GradScaler's bookkeeping outside the
// model (its one-element scale tensors created, moved, inverted and updated — `full`, `to`, `double`,
// `reciprocal`, `float`, `fill_`, `copy_` — and its `_amp_*` kernels). A side that scales and one that does
// not differ by exactly these records; compare counts them as implementation records, not as missing ones.
bool is_loss_scale_op_record(const Record& r, const std::vector<LossScale>& scales);

}  // namespace parity
