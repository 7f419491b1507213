// parity/utf8.h — UTF-8 well-formedness (Unicode 15, table 3-7). Names come from other people's files
// and file systems, which may hold any bytes (a Latin-1 file name); outputs whose format requires UTF-8
// (JSON, the CSV that pandas reads, the Arrow file's utf8 columns) replace what is not well-formed, and
// the terminal escapes it (parity/terminal_text.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace parity {

// Length of the well-formed UTF-8 sequence starting at s[i], 0 if none starts there.
size_t utf8_sequence_length(std::string_view s, size_t i);

// Walks `s` in order: `whole(piece)` for each well-formed sequence (a string_view of 1-4 bytes),
// `stray(byte)` for each byte that is not part of one.
template <class Whole, class Stray>
void for_each_utf8_sequence(std::string_view s, Whole&& whole, Stray&& stray) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      stray(static_cast<unsigned char>(s[i]));
      i += 1;
    } else {
      whole(s.substr(i, n));
      i += n;
    }
  }
}

// Whether every byte of `s` belongs to a well-formed sequence.
bool is_well_formed_utf8(std::string_view s);

// `s` with each byte that is not part of a well-formed sequence replaced by U+FFFD (what nlohmann's
// JSON writer does with its "replace" handler); well-formed text is returned unchanged.
std::string well_formed_utf8(std::string_view s);

}  // namespace parity
