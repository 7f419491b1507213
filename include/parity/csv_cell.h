// parity/csv_cell.h — how every CSV output of parity spells its header and a cell (compare, curve, ranks,
// eval).
// Numbers in the shortest form that reads back to the same double (round-trip exact); non-finite as
// nan / inf / -inf, which pandas.read_csv and numpy parse; text quoted as RFC 4180 says when it holds
// a comma, a quote or a line break, and made well-formed UTF-8.
#pragma once

#include <cmath>
#include <string>
#include <string_view>

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
// each becomes U+FFFD (parity/utf8.h), since pandas.read_csv decodes UTF-8 strictly; so does a NUL,
// which many CSV readers take for the end of the file.
//
// A cell that starts with '=', '+', '-', '@', a tab or a carriage return is a formula to a spreadsheet,
// quoted or not (a module named "=HYPERLINK(...)" runs when the CSV is opened): OWASP's "CSV Injection"
// advice is followed — such a cell gets a leading single quote, which spreadsheets show as text, and is
// quoted. Numbers never pass here (csv_number), so "-0.5" and "-inf" stay numbers.
inline std::string csv_escape(const std::string& s) {
  if (!is_well_formed_utf8(s)) return csv_escape(well_formed_utf8(s));
  if (s.find('\0') != std::string::npos) {
    std::string clean;
    for (char c : s) clean += c == '\0' ? std::string("\xEF\xBF\xBD") : std::string(1, c);  // U+FFFD
    return csv_escape(clean);
  }
  const bool formula = !s.empty() && std::string_view("=+-@\t\r").find(s[0]) != std::string_view::npos;
  if (!formula && s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = formula ? "\"'" : "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace parity
