// src/core/utf8.cpp — UTF-8 well-formedness (parity/utf8.h).
#include "parity/utf8.h"

#include <cstdint>

namespace parity {

size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  const size_t left = s.size() - i;
  const uint8_t c = b(0);
  if (c < 0x80) return 1;
  const auto cont = [&](size_t k, uint8_t lo = 0x80, uint8_t hi = 0xBF) { return k < left && b(k) >= lo && b(k) <= hi; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;  // no UTF-16 surrogates
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

namespace {

// Where the first byte that is not part of a well-formed sequence lies; s.size() if none.
size_t first_stray_byte(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && static_cast<uint8_t>(s[i]) < 0x80) ++i;  // ASCII: the common case
  for (size_t n = 0; i < s.size(); i += n) {
    if ((n = utf8_sequence_length(s, i)) == 0) break;
  }
  return i;
}

}  // namespace

bool is_well_formed_utf8(std::string_view s) { return first_stray_byte(s) == s.size(); }

std::string well_formed_utf8(std::string_view s) {
  const size_t i = first_stray_byte(s);
  if (i == s.size()) return std::string(s);
  std::string out(s.substr(0, i));
  for_each_utf8_sequence(
      s.substr(i), [&out](std::string_view piece) { out += piece; }, [&out](unsigned char) { out += "\xEF\xBF\xBD"; });
  return out;
}

}  // namespace parity
