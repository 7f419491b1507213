// The --map file: exact and regex rules from target names to golden names (docs/alignment.md).
#include "parity/matching.h"

#include <cctype>
#include <fstream>
#include <sstream>

namespace parity::matching {
namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// True when p[i] == '{' opens a well-formed ECMAScript bound {n}, {n,} or {n,m}; `end` is its '}'.
bool brace_quantifier(const std::string& p, size_t i, size_t& end) {
  size_t j = i + 1;
  const size_t digits = j;
  while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) ++j;
  if (j == digits) return false;
  if (j < p.size() && p[j] == ',') {
    ++j;
    while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) ++j;
  }
  if (j >= p.size() || p[j] != '}') return false;
  end = j;
  return true;
}

// The offset of a quantifier applied to a quantifier ("a**", "a+{2}", "a*?+"), npos when there is none.
// ECMAScript rejects these ("nothing to repeat"); libstdc++'s std::regex accepts them and then matches
// in time exponential in the height of the stack: `re:(a****...)` with 40 stars did not finish on an
// 18-character name (found by fuzz/map.cpp). One '?' right after a quantifier is ECMAScript's lazy form.
size_t repeated_quantifier(const std::string& p) {
  bool after_quantifier = false, lazy_allowed = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    size_t brace_end = i;
    if (c == '*' || c == '+' || c == '?' || (c == '{' && brace_quantifier(p, i, brace_end))) {
      if (after_quantifier) {
        if (c == '?' && lazy_allowed) {
          lazy_allowed = false;
          continue;
        }
        return i;
      }
      after_quantifier = lazy_allowed = true;
      i = brace_end;
      continue;
    }
    after_quantifier = lazy_allowed = false;
    if (c == '\\') {
      ++i;  // an escaped character is an atom
    } else if (c == '[') {  // a class is one atom: skip to its closing ']' (a first ']' is literal)
      size_t j = i + 1;
      if (j < p.size() && p[j] == '^') ++j;
      if (j < p.size() && p[j] == ']') ++j;
      while (j < p.size() && p[j] != ']') j += p[j] == '\\' ? 2 : 1;
      i = j;
    }
  }
  return std::string::npos;
}

// The offset of a back-reference or repetition bound with more than 9 digits ("\\5555555555555",
// "a{99999999999}"), npos when there is none. libstdc++'s regex compiler accumulates such a number in a
// long without an overflow check (undefined behaviour; found by fuzz/map.cpp under UBSan), and no name
// has that many groups or characters.
size_t oversized_number(const std::string& p) {
  auto digits_at = [&](size_t j) {
    size_t k = j;
    while (k < p.size() && std::isdigit(static_cast<unsigned char>(p[k]))) ++k;
    return k - j;
  };
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    if (p[i] != '\\' && p[i] != '{') continue;
    size_t n = digits_at(i + 1);
    if (n > 9) return i + 1;
    if (p[i] == '{' && i + 1 + n < p.size() && p[i + 1 + n] == ',' && digits_at(i + 2 + n) > 9) return i + 2 + n;
    if (p[i] == '\\') ++i;  // "\\{" is a literal brace
  }
  return std::string::npos;
}

}  // namespace

std::string NameMap::apply(const std::string& name) const {
  for (const MapRule& r : rules) {
    if (r.is_regex) {
      if (std::regex_match(name, r.re)) return std::regex_replace(name, r.re, r.golden, std::regex_constants::format_first_only);
      continue;
    }
    if (name == r.target) return r.golden;
    // A module-path prefix: "a.b" maps "a.b.c/forward/output/0" and "a.b/forward/input/0".
    if (name.size() > r.target.size() && name.compare(0, r.target.size(), r.target) == 0) {
      const char next = name[r.target.size()];
      if (next == '.' || next == '/') return r.golden + name.substr(r.target.size());
    }
  }
  return "";
}

Result<NameMap> parse_name_map(const std::string& text, const std::string& origin) {
  NameMap map;
  map.file = origin;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const size_t hash = line.find('#');
    // '#' is part of parity event names ("softmax#0"): a comment starts only at line start or after a space.
    if (hash != std::string::npos && (hash == 0 || line[hash - 1] == ' ' || line[hash - 1] == '\t'))
      line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const size_t arrow = line.find("=>");
    if (arrow == std::string::npos)
      return Status::Invalid(origin + ":" + std::to_string(n) + ": expected 'TARGET => GOLDEN' or 're:REGEX => GOLDEN'");
    MapRule r;
    r.line = n;
    r.target = trim(line.substr(0, arrow));
    r.golden = trim(line.substr(arrow + 2));
    if (r.target.rfind("re:", 0) == 0) {
      r.is_regex = true;
      r.target = trim(r.target.substr(3));
      if (size_t q = repeated_quantifier(r.target); q != std::string::npos)
        return Status::Invalid(origin + ":" + std::to_string(n) + ": '" + r.target +
                               "' is not a valid regular expression: nothing to repeat at offset " +
                               std::to_string(q) + " (a quantifier applied to a quantifier)");
      if (size_t q = oversized_number(r.target); q != std::string::npos)
        return Status::Invalid(origin + ":" + std::to_string(n) + ": '" + r.target +
                               "' is not a valid regular expression: a back-reference or repetition count of more "
                               "than 9 digits at offset " + std::to_string(q));
      try {
        r.re = std::regex(r.target, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return Status::Invalid(origin + ":" + std::to_string(n) + ": '" + r.target +
                               "' is not a valid regular expression: " + e.what());
      }
    }
    if (r.target.empty() || r.golden.empty())
      return Status::Invalid(origin + ":" + std::to_string(n) + ": both sides of '=>' must be non-empty");
    map.rules.push_back(std::move(r));
  }
  return map;
}

Result<NameMap> load_name_map(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::IOError(path + ": cannot open the mapping file");
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse_name_map(ss.str(), path);
}

}  // namespace parity::matching
