// classify_rows: the rounding-noise class of every compared row (docs/judgement.md "Noise unit").
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "analysis/event_index.h"
#include "nlohmann/json.hpp"
#include "parity/analysis.h"

namespace parity {

using analysis_detail::has_capture_metadata;
using analysis_detail::is_elementwise_op;
using analysis_detail::Slot;
using analysis_detail::slot_of;

namespace {

// Reduction length of an event: the last dimension of its first floating input, unless the op is
// elementwise (then 1). Unknown (no floating input recorded) → the last dimension of the row itself
// for non-elementwise events, which is the feature dimension for activations.
int64_t reduction_length_for(const CompareRow& row, const Record* first_float_input) {
  const Record& g = *row.golden;
  if (slot_of(g) == Slot::kParameter) return 1;  // a stored parameter is rounded once
  if (!g.op.empty() && is_elementwise_op(g.op)) return 1;
  const Shape& s = first_float_input ? first_float_input->shape : g.shape;
  if (s.empty()) return 1;
  return std::max<int64_t>(s.back(), 1);
}

// The unit roundoff of fp32 matmuls a fingerprint declares: TF32 (10-bit mantissa, u = 2^-11) when
// torch.backends.cuda.matmul.allow_tf32 is on or float32_matmul_precision is "high"; bf16 (2^-8) for
// "medium" (torch docs, "torch.set_float32_matmul_precision"). 0 when the run asked for full fp32.
// cudnn's allow_tf32 is on by default and says nothing about CPU runs: not used.
double declared_matmul_roundoff(const std::optional<std::string>& fingerprint) {
  if (!fingerprint) return 0.0;
  const nlohmann::json j = nlohmann::json::parse(*fingerprint, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return 0.0;
  double u = 0.0;
  if (const auto it = j.find("tf32"); it != j.end() && it->is_object() && it->value("cuda_matmul", false)) u = 0x1p-11;
  if (const auto it = j.find("matmul_precision"); it != j.end() && it->is_string()) {
    if (*it == "high") u = std::max(u, 0x1p-11);
    if (*it == "medium") u = std::max(u, 0x1p-8);
  }
  return u;
}

// The difference a step's state carries from the steps before it, per (rank, step): the largest relative
// difference (rel L2) of a parameter at that step whose update since the previous captured step was
// measured and does not differ (ParameterUpdate: its gradients explain it). Tensors computed from such
// parameters differ by about as much, whatever their own rounding: optimizers amplify tiny gradient
// differences (Adam's normalisation flips near-zero entries; measured 160x the gradient's relative error
// on a benign fp32 kernel swap), so a step's u is at least this (docs/judgement.md "Parameters across
// steps"). A parameter whose update differs, or that has no earlier step, sets no floor.
std::map<std::pair<int, int64_t>, double> carried_state_error(const CompareResult& result) {
  std::map<std::pair<int, int64_t>, double> state;
  for (const CompareRow& row : result.rows) {
    if (!row.update || row.update->differs) continue;
    const double e = row_observed_error(row);
    if (!std::isfinite(e)) continue;
    double& s = state[{row.golden->rank, row.golden->step}];
    s = std::max(s, e);
  }
  return state;
}

}  // namespace

void classify_rows(CompareResult& result, const AnalysisOptions& options) {
  const bool capture = has_capture_metadata(result);

  // First floating input of each event (for the reduction length and the cancellation floor).
  std::unordered_map<EventKey, size_t, EventKeyHash> first_input;
  if (capture) {
    for (size_t i = 0; i < result.rows.size(); ++i) {
      const CompareRow& row = result.rows[i];
      if (slot_of(*row.golden) != Slot::kInput || !dtype_is_float(row.golden->dtype)) continue;
      const EventKey key = event_key(*row.golden);
      auto it = first_input.find(key);
      if (it == first_input.end() || row.golden->index < result.rows[it->second].golden->index) first_input[key] = i;
    }
  }

  // Ambient unit roundoff: for capture dumps, the coarsest float dtype seen so far in execution order
  // within a rank, on either side, earlier steps included. A bf16 run carries bf16 noise into every later
  // tensor, even those an fp32 island (a norm upcast to fp32) stores in fp32; and a step starts from the
  // state the earlier steps computed (parameters updated from bf16-computed gradients, optimizer moments),
  // so it carries their rounding from its first event on. Whether an update itself differs beyond what its
  // gradient explains is judged separately (ParameterUpdate, docs/judgement.md "Parameters across steps").
  std::vector<double> ambient(result.rows.size(), 0.0);
  // A run that let fp32 matmuls round their inputs to TF32 (or bf16) carries that rounding from its first
  // matmul on, whatever dtype it stores: the declared precision is the floor of the ambient one.
  const double declared = std::max(declared_matmul_roundoff(result.golden_fingerprint),
                                   declared_matmul_roundoff(result.target_fingerprint));
  if (capture) {
    const std::map<std::pair<int, int64_t>, double> state = carried_state_error(result);
    std::map<int, double> coarsest;  // per rank; rows come in (rank, step, order) order
    for (size_t i : rows_in_execution_order(result.rows)) {
      const CompareRow& row = result.rows[i];
      double& c = coarsest[row.golden->rank];
      if (auto it = state.find({row.golden->rank, row.golden->step}); it != state.end()) c = std::max(c, it->second);
      for (DType t : {row.golden->dtype, row.target->dtype})
        if (dtype_is_float(t)) c = std::max(c, unit_roundoff(t));
      ambient[i] = std::max(c, declared);
    }
  }

  for (size_t i = 0; i < result.rows.size(); ++i) {
    CompareRow& row = result.rows[i];
    const double observed = row_observed_error(row);
    double u = pair_unit_roundoff(row.golden->dtype, row.target->dtype);
    // Integer rows (token ids, masks) stay exact whatever the ambient precision.
    if (dtype_is_float(row.golden->dtype) || dtype_is_float(row.target->dtype)) u = std::max(u, ambient[i]);
    const CompareRow* in_row = nullptr;
    if (capture && slot_of(*row.golden) != Slot::kInput) {
      auto it = first_input.find(event_key(*row.golden));
      if (it != first_input.end()) in_row = &result.rows[it->second];
    }
    double obs = observed;
    // Cancellation floor: a result whose golden RMS is below sqrt(u) × the RMS of the input it was computed
    // from has lost more than half its significant digits to cancellation (a key-bias gradient, which is
    // zero in exact arithmetic, is pure rounding residue). Relative to itself its error means nothing;
    // it is measured relative to the input's scale instead (docs/judgement.md "Cancellation").
    // Only in backward, where mathematically-zero results are common (bias gradients under softmax's shift
    // invariance, gradients of masked positions); forward normalisations shrink their input's scale on
    // purpose. The factor is min(sqrt(u), 2^-10) so that bf16's sqrt(u) = 1/16 does not catch ordinary
    // scale changes.
    if (in_row && row.metrics && in_row->metrics && std::isfinite(obs) && row.metrics->numel > 0 &&
        in_row->metrics->numel > 0 && row.golden->direction == "backward") {
      const double out_rms = row.metrics->golden.l2norm / std::sqrt(static_cast<double>(row.metrics->numel));
      const double in_rms = in_row->metrics->golden.l2norm / std::sqrt(static_cast<double>(in_row->metrics->numel));
      if (in_rms > 0 && std::isfinite(in_rms) && out_rms < std::min(std::sqrt(u), 0x1p-10) * in_rms)
        obs = row.metrics->euclidean / (in_rms * std::sqrt(static_cast<double>(row.metrics->numel)));
    }
    const NoiseJudgement j = classify_noise(obs, u, reduction_length_for(row, in_row ? in_row->golden : nullptr),
                                            options.noise);
    row.noise = j.cls;
    row.noise_ratio = j.ratio;
  }
}

}  // namespace parity
