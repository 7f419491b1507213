// ReLU masks that flip (docs/judgement.md "ReLU masks"). The gradient through a ReLU is g·[x > 0]: where
// the pre-activation x lies within rounding of 0, the two runs may take the other side, and the gradient
// at that position is all of g in one run and 0 in the other — one element hundreds of times the mean
// difference, from a tie broken the other way. Measured on the tensors: the positions where the two runs'
// forward inputs fall on different sides of 0, and the gradient's difference outside them.
#pragma once

#include <cstdint>

#include "parity/source.h"
#include "parity/status.h"

namespace parity::analysis_detail {

// True for the gradient a ReLU passes back to its input: a backward output record of a relu op, or of a
// module whose class is ReLU.
bool is_relu_input_gradient(const Record& r);

// "<event>/forward/input/0": the name of the pre-activation of the ReLU event whose input gradient is `r`.
std::string relu_input_name(const Record& r);

struct MaskFlip {
  int64_t flipped = 0;    // positions where x_golden > 0 and x_target > 0 disagree
  int64_t numel = 0;
  double residual = 0.0;  // ‖(t − g) outside the flipped positions‖₂ / ‖g‖₂ of the gradient (target × 2^-k)
};

// The mask flip of one gradient pair, from its four tensors (the forward inputs of the same event on each
// side, and the gradients); `target_scale_log2` unscales the target's gradient (a loss scale).
Result<MaskFlip> measure_mask_flip(const Record& golden_grad, const Record& target_grad, const Record& golden_input,
                                   const Record& target_input, const RecordSource& golden, const RecordSource& target,
                                   int target_scale_log2);

}  // namespace parity::analysis_detail
