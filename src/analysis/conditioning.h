// src/analysis/conditioning.h — how much output error an op's input error explains (private to the
// analysis module; docs/judgement.md "Conditioning").
//
// A softmax of logits spread over ±30 turns an input error of 1e-6 relative into an output error 30×
// larger without creating anything: it is ill-conditioned, not faulty. Ranking events by the ratio
// output error / input error would blame every softmax downstream of the real source. So for the ops
// whose conditioning varies most with their inputs, the error the inputs *explain* is computed by
// first-order propagation of the actual input difference dx = x_target − x_golden through the op's
// derivative at the golden input:
//
//   softmax      y = softmax(x):      dy = y ⊙ (dx − ⟨y, dx⟩)               (per row, last dim)
//   log_softmax  y = log_softmax(x):  dy = dx − ⟨softmax(x), dx⟩
//   layer_norm   z = (x − μ)/σ:       dz = (dx − mean dx − z·mean(z ⊙ (dx − mean dx)))/σ
//   rms_norm     z = x / rms(x):      dz = (dx − z·mean(z ⊙ dx)) / rms(x)
//   exp          dy = y ⊙ dx;   log  dy = dx / x
//
// explained relative error = ‖dy‖ / ‖y‖ (for the norms ‖dz‖ / ‖z‖: the affine weight scales both).
// Positions where the golden input is not finite (−inf masks) carry no difference.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace parity::analysis_detail {

// Does propagated_relative_error() know this op (an op-level event's op name, or a norm module class)?
bool has_conditioning_model(const std::string& op);

// The relative output error explained by the input difference, or nullopt when the op is unknown or
// the data does not fit (sizes). `x_golden`, `x_target` are the op's first input, `y_golden` its golden
// output, all flattened in C order; `last_dim` is the length of the reduced (last) dimension.
std::optional<double> propagated_relative_error(const std::string& op, const std::vector<double>& x_golden,
                                                const std::vector<double>& x_target,
                                                const std::vector<double>& y_golden, int64_t last_dim);

}  // namespace parity::analysis_detail
