// flip_role_name: how every output spells a row's part in a decision flip (parity/compare.h FlipRole).
#include "parity/compare.h"

namespace parity {

const char* flip_role_name(FlipRole r) {
  switch (r) {
    case FlipRole::kDecision: return "decision";
    case FlipRole::kAffected: return "affected";
    case FlipRole::kMask: return "mask";
    case FlipRole::kNone: break;
  }
  return "none";
}

}  // namespace parity
