// parity/json_depth.h — the nesting limit every reader applies to JSON text before parsing it.
// nlohmann::json's dump, copy and comparison recurse once per level, so a hostile file nesting
// arrays ~50k deep overflows the stack; readers refuse such text with a message instead.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace parity {

inline constexpr std::size_t kMaxJsonDepth = 512;

// Empty when `text` nests arrays and objects at most `limit` levels deep (brackets inside strings
// do not count); otherwise the problem, e.g. "JSON nests deeper than 512 levels (at byte 513)", for
// the caller to prefix with its file and line or record. Linear, allocates nothing on success.
std::string json_depth_problem(std::string_view text, std::size_t limit = kMaxJsonDepth);

}  // namespace parity
