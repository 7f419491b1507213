// compare's CSV writer and terminal table (parity/compare_report.h): the CSV's header and rows have one
// column count, quoted cells stay one cell; the table fits 100 columns, worst first, with its limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/memory_source.h"
#include "parity/compare.h"
#include "parity/compare_report.h"
#include "parity/thresholds.h"
#include "temp_dir.h"

namespace parity {
namespace {

using test::compare_options;
using test::MemorySource;
using test::ramp;
using test::stats;

TEST(CompareCsv, HeaderAndRowsHaveTheSameColumnCount) {
  MemorySource g, t;
  g.add("a,comma", ramp(16));
  t.add("a,comma", ramp(16));
  g.add_meta("s", {10}).stats = stats(-1, 1, 0.1, 3);
  t.add_meta("s", {10}).stats = stats(-1, 1, 0.1, 3);
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok());
  auto path = parity_test::process_temp_dir() / "compare.csv";
  ASSERT_TRUE(report::write_compare_csv(*r, path.string()).ok());
  std::ifstream in(path);
  std::string header, row1, row2;
  std::getline(in, header);
  std::getline(in, row1);
  std::getline(in, row2);
  EXPECT_EQ(header.rfind("schema,name,", 0), 0u) << header;
  auto columns = [](const std::string& line) {
    size_t n = 1;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted) ++n;
    }
    return n;
  };
  EXPECT_EQ(columns(header), columns(row1));
  EXPECT_EQ(columns(header), columns(row2));
  EXPECT_EQ(row1.rfind("parity.compare.csv/2,\"a,comma\"", 0), 0u) << row1;
  EXPECT_FALSE(report::write_compare_csv(*r, "/nonexistent/dir/x.csv").ok());
}

// ---- terminal table -------------------------------------------------------------------------------

std::vector<std::string> render_table(const CompareResult& r, const report::TableOptions& o) {
  std::FILE* f = std::tmpfile();
  report::print_compare_table(f, r, o);
  std::rewind(f);
  std::vector<std::string> lines;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, f) != nullptr) {
    std::string l(buf);
    if (!l.empty() && l.back() == '\n') l.pop_back();
    lines.push_back(l);
  }
  std::fclose(f);
  return lines;
}

TEST(CompareTable, WorstFirstFitsHundredColumnsAndLimits) {
  MemorySource g, t;
  for (int i = 0; i < 12; ++i) {
    const std::string name = "model.layers." + std::to_string(i) + ".a_rather_long_module_name.output_projection";
    std::vector<float> v = ramp(64, 1.0f + static_cast<float>(i));
    g.add(name, v);
    if (i == 7) {
      for (float& x : v) x = -x;
    }
    t.add(name, v);
  }
  g.add_meta("stats_only", {10}).stats = stats(-1, 1, 0.1, 3);
  t.add_meta("stats_only", {10}).stats = stats(-1, 1, 0.1, 9);
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok());
  report::TableOptions o;
  o.limit = 5;
  std::vector<std::string> lines = render_table(*r, o);
  for (const std::string& l : lines) EXPECT_LE(l.size(), 100u) << l;
  // Header, then the failing row first (worst first), then the statistics row that warns.
  size_t first = 0;
  while (first < lines.size() && lines[first].rfind("fail", 0) != 0) ++first;
  ASSERT_LT(first, lines.size());
  EXPECT_NE(lines[first].find(".7."), std::string::npos) << lines[first];
  bool stats_row = false, more = false;
  for (const std::string& l : lines) {
    stats_row = stats_row || (l.rfind("warn", 0) == 0 && l.find("(statistics)") != std::string::npos);
    more = more || l.find("... 8 more rows") != std::string::npos;
  }
  EXPECT_TRUE(stats_row);
  EXPECT_TRUE(more);

  o.sort = report::SortKey::kName;
  o.limit = 0;
  std::vector<size_t> by_name = report::sort_rows(*r, o);
  for (size_t i = 1; i < by_name.size(); ++i) {
    EXPECT_LE(r->rows[by_name[i - 1]].golden->name, r->rows[by_name[i]].golden->name);
  }
  o.sort = report::SortKey::kMetric;
  o.sort_metric = "cosine";
  EXPECT_NE(r->rows[report::sort_rows(*r, o)[0]].golden->name.find(".7."), std::string::npos);
}

// A metric with no value (the cosine of a single element) reads "n/a" in the table, as in every
// human-readable output (parity/number_text.h); it was "-" here, "NaN" in reasons, "nan" in the curve summary.
TEST(CompareTable, AMetricWithNoValueReadsNA) {
  MemorySource g, t;
  g.add("one", {2.0f});
  t.add("one", {2.5f});
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(std::isnan(r->rows[0].metrics->cosine));
  const std::vector<std::string> lines = render_table(*r, report::TableOptions{});
  const auto row = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.find("one") != std::string::npos; });
  ASSERT_NE(row, lines.end());
  EXPECT_NE(row->find(" n/a "), std::string::npos) << *row;
  EXPECT_EQ(row->find(" - "), std::string::npos) << *row;
}

}  // namespace
}  // namespace parity
