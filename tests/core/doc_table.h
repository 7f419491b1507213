// Reads the first column of a Markdown table in a docs/ page: the registries' documentation tests
// (every registered rule, format ... has its row, and every row names something registered).
#pragma once

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace parity::test {

// The page's text: docs/<page> under the source tree (PARITY_SOURCE_DIR, set by parity_test_dir).
inline std::string read_doc(const std::string& page) {
  std::ifstream in(std::string(PARITY_SOURCE_DIR) + "/docs/" + page);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The backquoted names that open the rows of the table under `heading` ("## Rules"): "| `NAME` ..." up
// to the first line after the table.
inline std::set<std::string> first_column_names(const std::string& text, const std::string& heading) {
  std::set<std::string> names;
  const size_t at = text.find("\n" + heading + "\n");
  if (at == std::string::npos) return names;
  std::istringstream lines(text.substr(at + heading.size() + 2));
  static const std::regex row(R"(^\| `([^`]+)`)");
  std::string line;
  bool in_table = false;
  while (std::getline(lines, line)) {
    if (line.rfind("|", 0) == 0) in_table = true;
    else if (in_table || line.rfind("#", 0) == 0) break;
    std::smatch m;
    if (std::regex_search(line, m, row)) names.insert(m[1]);
  }
  return names;
}

}  // namespace parity::test
