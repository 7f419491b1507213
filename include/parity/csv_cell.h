// parity/csv_cell.h — how every CSV output of parity spells its header and a cell (compare, curve, ranks,
// eval).
// Numbers in the shortest form that reads back to the same double (round-trip exact); non-finite as
// nan / inf / -inf, which pandas.read_csv and numpy parse; text quoted as RFC 4180 says when it holds
// a comma, a quote or a line break, and made well-formed UTF-8.
#pragma once

#include <cmath>
#include <string>

#include "fmt/format.h"
#include "parity/utf8.h"

namespace parity {

inline std::string csv_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);
}

// Every CSV of parity starts with the header line "schema,<columns>" and every row with its schema name
// ("parity.compare.csv/2"): pandas.read_csv(path) loads it with its defaults (no comment line to skip),
// and a row copied elsewhere still says what it is.
inline std::string csv_header(const std::string& columns) { return "schema," + columns + "\n"; }

// Text from other people's files may hold bytes that are not UTF-8 (a Latin-1 file name, a log key):
// each becomes U+FFFD (parity/utf8.h), since pandas.read_csv decodes UTF-8 strictly.
inline std::string csv_escape(const std::string& s) {
  if (!is_well_formed_utf8(s)) return csv_escape(well_formed_utf8(s));
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace parity
