// One attention mask in two representations: a boolean mask on one side (SDPA's `attn_mask`, True where a
// query attends) and the additive mask it stands for on the other (eager attention's 0 where it attends,
// one large negative constant — finfo.min, −1e9, −10000 or −inf — where it does not). Falcon's decoder
// layers receive the one or the other depending on `attn_implementation`; compared as numbers they differ
// by 3.4e38 although they say the same thing.
#pragma once

#include <optional>
#include <string>

#include "parity/tensor.h"

namespace parity::compare {

struct BooleanMaskReading {
  TensorView additive;        // the boolean side written as the additive mask: fp32, 0 or −inf
  bool golden_is_boolean = false;
  bool true_attends = true;   // the convention read: True = attend (SDPA), or True = masked (masked_fill)
  double masked_value = 0;    // the additive side's constant, read as −inf in the comparison
  std::string note;           // the start of the row's reason
};

// When one of `golden`, `target` is boolean and the other a floating-point tensor of the same element count
// holding only 0 and one negative constant c ≤ −10000 (or −inf): the boolean side as the additive mask, under
// the convention (True attends or True masks) that agrees with the additive side at more positions. The
// comparison then reads c as −inf (MetricOptions::extremes_as_infinities with |c|), so a position where the
// two masks disagree is a non-finite mismatch and fails the row. nullopt for any other pair.
std::optional<BooleanMaskReading> read_boolean_mask(const TensorView& golden, const TensorView& target);

}  // namespace parity::compare
