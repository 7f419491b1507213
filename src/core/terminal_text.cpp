// src/core/terminal_text.cpp — visible escapes for control characters and broken UTF-8
// (parity/terminal_text.h).
#include "parity/terminal_text.h"

#include <cstdint>

#include "parity/utf8.h"

namespace parity {

namespace {

bool is_c0_or_del(uint8_t c) { return c < 0x20 || c == 0x7F; }
bool is_c1(std::string_view s, size_t i, size_t n) {
  return n == 2 && static_cast<uint8_t>(s[i]) == 0xC2 && static_cast<uint8_t>(s[i + 1]) <= 0x9F;
}

void append_hex(std::string& out, const char* prefix, uint8_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += prefix;
  out += kHex[v >> 4];
  out += kHex[v & 15];
}

bool needs_escaping(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0 || (n == 1 && is_c0_or_del(static_cast<uint8_t>(s[i]))) || is_c1(s, i, n)) return true;
    i += n;
  }
  return false;
}

}  // namespace

std::string terminal_text(std::string_view s) {
  if (!needs_escaping(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  for_each_utf8_sequence(
      s,
      [&out](std::string_view piece) {
        const auto c = static_cast<uint8_t>(piece[0]);
        if (piece.size() == 1 && is_c0_or_del(c)) {
          append_hex(out, "\\x", c);
        } else if (is_c1(piece, 0, piece.size())) {
          append_hex(out, "\\u00", static_cast<uint8_t>(piece[1]));
        } else {
          out += piece;
        }
      },
      [&out](unsigned char c) { append_hex(out, "\\x", c); });
  return out;
}

}  // namespace parity
