// The --map file: exact and regex rules from target names to golden names (docs/alignment.md).
#include "parity/matching.h"

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

}  // namespace

std::string NameMap::apply(const std::string& name) const {
  for (const MapRule& r : rules) {
    if (r.is_regex) {
      if (std::optional<std::string> golden = r.re->replace_full_match(name, r.golden)) return *golden;
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
      Result<NamePattern> re = NamePattern::compile(r.target);
      if (!re.ok()) return re.status().WithContext(origin + ":" + std::to_string(n));
      if (Status st = check_replacement(r.golden, re->group_count()); !st.ok())
        return st.WithContext(origin + ":" + std::to_string(n));
      r.re = std::move(*re);
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
