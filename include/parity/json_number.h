// parity/json_number.h — how every JSON output of parity spells a double, and its list of problems.
// JSON has no NaN or infinities; parity writes them as the strings "NaN", "Infinity", "-Infinity",
// which JavaScript's Number() and Python's float() both read back (docs/compare-json.md "Encoding").
#pragma once

#include <cmath>
#include <vector>

#include "parity/status.h"

namespace parity {

template <typename Json>
Json json_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

// "problems": the messages of the inputs that could not be read or used, in order (each names its file).
template <typename Json>
Json json_problems(const std::vector<Status>& problems) {
  Json a = Json::array();
  for (const Status& p : problems) a.push_back(p.message());
  return a;
}

}  // namespace parity
