// The metric tables (parity/metrics.h) against what is spelled outside C++ (issue 32 §1): docs/compare-json.md
// documents every metric and no other, and every metric key the report (web/src/data.js) reads is one of
// the table's. The JSON writer, the CSV/Arrow columns and the Python dict are built from the tables.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <variant>

#include "parity/metrics.h"

namespace parity {
namespace {

std::string read_source(const std::string& path) {
  std::ifstream in(std::string(PARITY_SOURCE_DIR) + "/" + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text from `start` up to (not including) the first occurrence of `end` after it; empty if absent.
std::string section(const std::string& text, const std::string& start, const std::string& end) {
  const size_t at = text.find(start);
  if (at == std::string::npos) return "";
  const size_t stop = text.find(end, at + start.size());
  return text.substr(at, stop == std::string::npos ? std::string::npos : stop - at);
}

std::set<std::string> metric_names() {
  std::set<std::string> names;
  for (const MetricField& f : kMetricFields) names.insert(f.name);
  return names;
}

// The backquoted keys of the first column of the "rows[].metrics" table ("| `max_abs`, `max_abs_index` |")
// and the text of each row, by key.
struct DocTable {
  std::set<std::string> keys;
  std::map<std::string, std::string> row_of;
};

DocTable metrics_doc_table() {
  const std::string text =
      section(read_source("docs/compare-json.md"), "### `rows[].metrics` (tensor mode)", "\n### ");
  DocTable table;
  std::istringstream lines(text);
  static const std::regex key("`([a-z0-9_]+)`");
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::string first = line.substr(0, line.find('|', 1));
    for (std::sregex_iterator m(first.begin(), first.end(), key), end; m != end; ++m) {
      table.keys.insert((*m)[1]);
      table.row_of[(*m)[1]] = line;
    }
  }
  return table;
}

TEST(MetricTable, NamesAreUnique) {
  EXPECT_EQ(metric_names().size(), std::size(kMetricFields));
  std::set<std::string> side;
  for (const TensorStatsField& f : kSideStatsFields) side.insert(f.name);
  EXPECT_EQ(side.size(), std::size(kSideStatsFields));
}

TEST(MetricTable, DocsCompareJsonDocumentsEveryMetricAndNoOther) {
  const DocTable doc = metrics_doc_table();
  ASSERT_FALSE(doc.keys.empty()) << "docs/compare-json.md has no \"rows[].metrics\" table";
  const std::set<std::string> names = metric_names();
  for (const std::string& name : names)
    EXPECT_TRUE(doc.keys.count(name)) << "metric " << name << " (parity/metrics.h kMetricFields) has no row in "
                                      << "docs/compare-json.md \"rows[].metrics\"";
  for (const std::string& key : doc.keys)
    EXPECT_TRUE(names.count(key)) << "docs/compare-json.md \"rows[].metrics\" documents " << key
                                  << ", which is not in parity/metrics.h kMetricFields";
}

TEST(MetricTable, DocsCompareJsonListsEverySideStatistic) {
  const DocTable doc = metrics_doc_table();
  for (const MetricField& f : kMetricFields) {
    if (!std::holds_alternative<TensorStats PairMetrics::*>(f.member)) continue;
    ASSERT_TRUE(doc.row_of.count(f.name)) << f.name;
    const std::string& row = doc.row_of.at(f.name);
    for (const TensorStatsField& s : kSideStatsFields)
      EXPECT_NE(row.find("`" + std::string(s.name) + "`"), std::string::npos)
          << "docs/compare-json.md's row of " << f.name << " does not list the side statistic " << s.name;
  }
}

TEST(MetricTable, EveryMetricTheReportReadsIsInTheTable) {
  // P.toEvent reads a row's metrics as `m.<key>` (m = row.metrics): each key must be the JSON's.
  const std::string to_event = section(read_source("web/src/data.js"), "P.toEvent = function", "\n};");
  ASSERT_FALSE(to_event.empty()) << "web/src/data.js has no P.toEvent";
  const std::set<std::string> names = metric_names();
  static const std::regex read(R"(\bm\.([A-Za-z0-9_]+))");
  int reads = 0;
  for (std::sregex_iterator m(to_event.begin(), to_event.end(), read), end; m != end; ++m, ++reads)
    EXPECT_TRUE(names.count((*m)[1])) << "web/src/data.js reads metrics." << (*m)[1]
                                      << ", which parity/metrics.h kMetricFields does not have";
  EXPECT_GE(reads, 5);  // the pattern still finds the report's reads
}

}  // namespace
}  // namespace parity
