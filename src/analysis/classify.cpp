// classify_rows: the rounding-noise class of every compared row (docs/judgement.md "Noise unit").
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis/event_index.h"
#include "parity/analysis.h"

namespace parity {

using analysis_detail::has_capture_metadata;
using analysis_detail::is_elementwise_op;
using analysis_detail::rows_in_execution_order;
using analysis_detail::Slot;
using analysis_detail::slot_of;

namespace {

// Reduction length of an event: the last dimension of its first floating input, unless the op is
// elementwise (then 1). Unknown (no floating input recorded) → the last dimension of the row itself
// for non-elementwise events, which is the feature dimension for activations.
int64_t reduction_length_for(const CompareRow& row, const Record* first_float_input) {
  const Record& g = row.golden;
  if (slot_of(g) == Slot::kParameter) return 1;  // a stored parameter is rounded once
  if (!g.op.empty() && is_elementwise_op(g.op)) return 1;
  const Shape& s = first_float_input ? first_float_input->shape : g.shape;
  if (s.empty()) return 1;
  return std::max<int64_t>(s.back(), 1);
}

}  // namespace

void classify_rows(CompareResult& result, const AnalysisOptions& options) {
  const bool capture = has_capture_metadata(result);

  // First floating input of each event (for the reduction length).
  std::unordered_map<std::string, const Record*> first_input;
  if (capture) {
    for (const CompareRow& row : result.rows) {
      if (slot_of(row.golden) != Slot::kInput || !dtype_is_float(row.golden.dtype)) continue;
      const std::string key = event_key(row.golden);
      auto it = first_input.find(key);
      if (it == first_input.end() || row.golden.index < it->second->index) first_input[key] = &row.golden;
    }
  }

  // Ambient unit roundoff: for capture dumps, the coarsest float dtype seen so far in execution order
  // within (rank, step), on either side. A bf16 run carries bf16 noise into every later tensor, even
  // those an fp32 island (a norm upcast to fp32) stores in fp32.
  std::vector<double> ambient(result.rows.size(), 0.0);
  if (capture) {
    std::map<std::pair<int, int64_t>, double> coarsest;
    for (size_t i : rows_in_execution_order(result)) {
      const CompareRow& row = result.rows[i];
      double& c = coarsest[{row.golden.rank, row.golden.step}];
      for (DType t : {row.golden.dtype, row.target.dtype})
        if (dtype_is_float(t)) c = std::max(c, unit_roundoff(t));
      ambient[i] = c;
    }
  }

  for (size_t i = 0; i < result.rows.size(); ++i) {
    CompareRow& row = result.rows[i];
    const double observed = row_observed_error(row);
    double u = pair_unit_roundoff(row.golden.dtype, row.target.dtype);
    // Integer rows (token ids, masks) stay exact whatever the ambient precision.
    if (dtype_is_float(row.golden.dtype) || dtype_is_float(row.target.dtype)) u = std::max(u, ambient[i]);
    const Record* in = nullptr;
    if (capture) {
      auto it = first_input.find(event_key(row.golden));
      if (it != first_input.end()) in = it->second;
    }
    const NoiseJudgement j = classify_noise(observed, u, reduction_length_for(row, in), options.noise);
    row.noise = j.cls;
    row.noise_ratio = j.ratio;
  }
}

}  // namespace parity
