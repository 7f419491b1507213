// src/core/json_depth.cpp — bracket depth of JSON text, strings skipped (parity/json_depth.h).
#include "parity/json_depth.h"

#include <fmt/format.h>

namespace parity {

std::string json_depth_problem(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character cannot end the string
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return fmt::format("JSON nests deeper than {} levels (at byte {})", limit, i);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return {};
}

}  // namespace parity
