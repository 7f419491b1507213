// parity/json_number.h — how every JSON output of parity spells a double.
// JSON has no NaN or infinities; parity writes them as the strings "NaN", "Infinity", "-Infinity",
// which JavaScript's Number() and Python's float() both read back (docs/compare-json.md "Encoding").
#pragma once

#include <cmath>

namespace parity {

template <typename Json>
Json json_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

}  // namespace parity
