// parity/json_number.h — how every JSON output of parity spells a double, and its list of problems.
// JSON has no NaN or infinities; parity writes them as the strings "NaN", "Infinity", "-Infinity",
// which JavaScript's Number() and Python's float() both read back (docs/compare-json.md "Encoding").
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "parity/status.h"

namespace parity {

template <typename Json>
Json json_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

// The text of a JSON output. Names in it come from other people's files (a CSV header, a log key, a
// folder or file name) and may hold bytes that are not UTF-8: they are written as U+FFFD instead of
// making dump() throw (which ended the command with "internal error").
template <typename Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// "problems": the messages of the inputs that could not be read or used, in order (each names its file).
template <typename Json>
Json json_problems(const std::vector<Status>& problems) {
  Json a = Json::array();
  for (const Status& p : problems) a.push_back(p.message());
  return a;
}

}  // namespace parity
