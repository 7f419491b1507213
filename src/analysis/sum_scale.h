// src/analysis/sum_scale.h — the scale of the sum a recorded gradient is (private to the analysis module).
//
// The gradient arriving at an op's output (`<op event>/backward/input/0`) is computed by the backward of the
// op that consumed that output. Where the consumer broadcast it (a norm's rsqrt of shape [..., 1] times the
// hidden states [..., d]; an unsqueezed vector times a matrix), that gradient is a sum over the broadcast
// dimension of products of the consumer's arriving gradient and its other operand, and rounding errs in
// proportion to the norm of those terms, not of the sum: Σ_i g_i·x_i over the hidden dimension of an
// RMSNorm cancels to ~1/50 of ‖terms‖, so its relative error is ~50 times one rounding (docs/judgement.md
// "Sums that cancel"). The gradients computed from such a sum by ops that do not sum again (the rsqrt's own
// elementwise backward, the eps add, the mean's expand) carry its relative error and its scale.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "parity/analysis.h"

namespace parity::analysis_detail {

// The scale a gradient row is judged against: ‖terms‖ / ‖g‖ ≥ 1 (how far its sum cancelled) and the number
// of terms summed per element (the reduction length of the noise bound).
struct SumScale {
  double factor = 1.0;
  int64_t terms = 1;
};

// ‖r‖₂ and the element count of a record (its stored statistics, else its compared row's); nullopt unknown.
using RecordNorm = std::function<std::optional<std::pair<double, int64_t>>(const Record&)>;

class SumScales {
 public:
  // `records`: the golden listing in any order (every record of the run, not only the compared ones: a filter
  // changes no verdict). Consumers are found by value identity: a forward input record of an op event whose
  // stored statistics, dtype and shape equal those of the producing op's output, later in the same rank and
  // step, and the only such record (a tensor read by two ops receives the sum of two gradients: not used).
  SumScales(const std::vector<const Record*>& records, RecordNorm norm);

  // The scale of a backward input-slot record (the gradient arriving at an op's output), where its sum is
  // known to cancel (factor > 1); nullopt otherwise.
  std::optional<SumScale> of(const Record& arriving_gradient);

 private:
  std::optional<SumScale> compute(const Record& arriving_gradient, int depth);
  // The record of `like`'s call in `direction`, input or output slot, at `index`; nullptr when not recorded.
  const Record* find(const Record& like, std::string_view direction, bool input_slot, int index) const;
  const Record* unique_consumer(const Record& output) const;

  RecordNorm norm_;
  // Each op call's records, forward and backward, by (call name: the event stem without its direction,
  // step, rank).
  std::unordered_map<EventKey, std::vector<const Record*>, EventKeyHash> by_call_;
  // Forward input records of op events, grouped by (rank, step, statistics): candidates for consumers.
  struct ValueKey {
    int rank;
    int64_t step;
    double l2norm, min, max, mean;
    int64_t numel;
    bool operator==(const ValueKey&) const = default;
  };
  struct ValueKeyHash {
    size_t operator()(const ValueKey& k) const noexcept;
  };
  std::unordered_map<ValueKey, std::vector<const Record*>, ValueKeyHash> readers_;
  std::unordered_map<const Record*, std::optional<SumScale>> memo_;
};

}  // namespace parity::analysis_detail
