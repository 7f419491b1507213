// Reads the first column of a Markdown table in a docs/ page: the registries' documentation tests
// (every registered rule, format ... has its row, and every row names something registered).
#pragma once

#include <gtest/gtest.h>

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

// Every name of `registered` has its row in the table under `heading` of docs/<page>, and every row names a
// registered one (`what`: "rule", "format" ... in the messages).
inline void expect_table_matches_registry(const std::string& page, const std::string& heading,
                                          const std::set<std::string>& registered, const std::string& what) {
  const std::set<std::string> documented = first_column_names(read_doc(page), heading);
  ASSERT_FALSE(documented.empty()) << "docs/" << page << " has no \"" << heading << "\" table";
  for (const std::string& name : registered)
    EXPECT_TRUE(documented.count(name)) << what << " " << name << " is registered but has no row in docs/" << page
                                        << " \"" << heading << "\"";
  for (const std::string& name : documented)
    EXPECT_TRUE(registered.count(name)) << "docs/" << page << " \"" << heading << "\" documents " << what << " "
                                        << name << ", which is not registered";
}

}  // namespace parity::test
