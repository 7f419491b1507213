// tests/core/schemas_test.cpp — parity/schemas.h is the one list of schema ids: each declared once, in
// kAll, documented in the page it names; src/ spells none as a literal, and every id that the headers,
// the Python package and the report's script name is one of the list (issue 32 §5).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "parity/schemas.h"

namespace parity {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = PARITY_SOURCE_DIR;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::set<std::string> registered_ids() {
  std::set<std::string> ids;
  for (const schemas::Schema* s : schemas::kAll) ids.insert(s->id);
  return ids;
}

// The files under `dir` whose names end in one of `extensions`.
std::vector<fs::path> files_under(const fs::path& dir, const std::set<std::string>& extensions) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && extensions.count(e.path().extension().string())) out.push_back(e.path());
  return out;
}

// C++ source without its comments (// and /* */), string and character literals kept, raw strings too:
// what is left is code, where a schema id can only be a literal.
std::string code_without_comments(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, 2, "//") == 0) {
      i = s.find('\n', i);
      if (i == std::string::npos) break;
    } else if (s.compare(i, 2, "/*") == 0) {
      const size_t end = s.find("*/", i + 2);
      i = end == std::string::npos ? s.size() : end + 2;
    } else if (s.compare(i, 2, "R\"") == 0) {  // R"delim( ... )delim"
      const size_t open = s.find('(', i + 2);
      const std::string close = ")" + s.substr(i + 2, open - i - 2) + "\"";
      const size_t end = s.find(close, open);
      const size_t stop = end == std::string::npos ? s.size() : end + close.size();
      out += s.substr(i, stop - i);
      i = stop;
    } else if (s[i] == '"' || s[i] == '\'') {
      const char quote = s[i];
      size_t j = i + 1;
      while (j < s.size() && s[j] != quote && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      out += s.substr(i, j + 1 - i);
      i = j + 1;
    } else {
      out += s[i++];
    }
  }
  return out;
}

TEST(Schemas, EachIsDeclaredOnceWithANameAnIdAPageAndADoc) {
  static const std::regex id_form(R"(parity\.[a-z][a-z.-]*/[0-9]+(\.[0-9]+)?)");
  static const std::regex name_form("[A-Z][A-Z_]*");
  std::set<std::string> names, ids;
  for (const schemas::Schema* s : schemas::kAll) {
    EXPECT_TRUE(std::regex_match(s->id, id_form)) << s->id;
    EXPECT_TRUE(std::regex_match(s->name, name_form)) << s->name << " is not a Python constant's name";
    EXPECT_TRUE(names.insert(s->name).second) << "two schemas are named " << s->name;
    EXPECT_TRUE(ids.insert(s->id).second) << s->id << " is declared twice";
    EXPECT_GT(std::string(s->what).size(), 10u) << s->id << " has no doc line";
  }
}

// A declaration left out of kAll would be neither bound to Python nor checked against the docs.
TEST(Schemas, EveryDeclarationIsInTheList) {
  const std::string header = read_text(kRoot / "include/parity/schemas.h");
  static const std::regex declared(R"re(inline constexpr Schema \w+\{"\w+", "([^"]+)")re");
  std::set<std::string> in_header;
  for (auto it = std::sregex_iterator(header.begin(), header.end(), declared); it != std::sregex_iterator(); ++it)
    in_header.insert((*it)[1]);
  EXPECT_EQ(in_header, registered_ids());
  EXPECT_EQ(in_header.size(), std::size(schemas::kAll));
}

TEST(Schemas, EachIsDocumentedInItsPage) {
  for (const schemas::Schema* s : schemas::kAll) {
    const std::string page(s->doc);
    EXPECT_EQ(page.rfind("docs/", 0), 0u) << s->id << ": " << page << " is not a page of docs/";
    const std::string text = read_text(kRoot / page);
    ASSERT_FALSE(text.empty()) << s->id << ": " << page << " is missing or empty";
    EXPECT_NE(text.find(s->id), std::string::npos) << s->id << " is not documented in " << page;
  }
}

// Not in a writer, a check, a message or a help text: each takes the constant, so a revision is one edit.
TEST(Schemas, CodeInSrcSpellsNoIdAsALiteral) {
  static const std::regex literal(R"re(parity\.[a-z][a-z.-]*/[0-9])re");
  for (const fs::path& file : files_under(kRoot / "src", {".cpp", ".h", ".cc"})) {
    const std::string code = code_without_comments(read_text(file));
    std::smatch m;
    EXPECT_FALSE(std::regex_search(code, m, literal))
        << file.lexically_relative(kRoot).string() << " spells a schema id in its code (" << m.str(0)
        << "...): use its constant in parity/schemas.h";
  }
}

// Ids named anywhere in the headers, src/, the Python package and the report's script (comments too)
// are ids of the list, so no comment or check names a revision that nothing writes.
TEST(Schemas, EveryIdNamedInTheTreeIsListed) {
  // Retired revisions still named where a reader explains what it no longer takes.
  const std::set<std::string> retired = {"parity.export/1"};
  const std::set<std::string> ids = registered_ids();
  static const std::regex named(R"(parity\.[a-z][a-z.-]*/[0-9]+(\.[0-9]+)?)");
  const std::pair<const char*, std::set<std::string>> places[] = {
      {"include/parity", {".h"}}, {"src", {".cpp", ".h"}}, {"python/parity", {".py"}},
      {"python/ext", {".cpp", ".h"}}, {"web/src", {".js"}}};
  for (const auto& [dir, extensions] : places)
    for (const fs::path& file : files_under(kRoot / dir, extensions)) {
      const std::string text = read_text(file);
      for (auto it = std::sregex_iterator(text.begin(), text.end(), named); it != std::sregex_iterator(); ++it)
        EXPECT_TRUE(ids.count(it->str()) || retired.count(it->str()))
            << file.lexically_relative(kRoot).string() << " names " << it->str()
            << ", which parity/schemas.h does not list";
    }
}

TEST(Schemas, TheLiteralCheckSeesCodeAndSkipsComments) {
  EXPECT_EQ(code_without_comments("a // \"parity.x/1\"\nb"), "a \nb");
  EXPECT_EQ(code_without_comments("x = \"//\"; /* \"parity.x/1\" */ y"), "x = \"//\";  y");
  EXPECT_EQ(code_without_comments("R\"({\"k\": 1} // no comment)\" z"), "R\"({\"k\": 1} // no comment)\" z");
}

TEST(Schemas, FamilyIsTheIdUpToItsRevision) {
  EXPECT_EQ(schemas::family(schemas::kCompare), "parity.compare/");
  EXPECT_EQ(schemas::family(schemas::kDump), "parity.dump/");
}

}  // namespace
}  // namespace parity
