// tests/report/msprobe_table_test.cpp — msprobe's compare_result layout (report/msprobe_table.h) on cases the
// real-msprobe test (tests/python/test_msprobe_csv.py) does not reach: shapes that differ, NaN positions that
// disagree, a target record without a golden one, a one-element tensor, statistics at a golden zero, names
// from a source's native_info; Python's float repr; the CSV and xlsx files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "parity/compare.h"
#include "parity/thresholds.h"
#include "parity/compare_report.h"
#include "report/msprobe_table.h"
#include "core/memory_source.h"
#include "temp_dir.h"

namespace parity {
namespace {

using report::MsprobeCell;
using report::MsprobeMode;
using report::MsprobeTable;

// msprobe's dumps name their files <name>.pt under the dump folder.
struct MemorySource : test::MemorySource {
  MemorySource() : test::MemorySource(".pt", "/d/") {}
};

CompareResult compare(const MemorySource& g, const MemorySource& t) {
  CompareOptions o;
  o.thresholds = default_thresholds();
  o.jobs = 1;
  Result<CompareResult> r = run_compare(g, t, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).value();
}

// Each row's cells by column name, keyed by NPU Name.
std::map<std::string, std::map<std::string, MsprobeCell>> cells_by_name(const MsprobeTable& table) {
  std::map<std::string, std::map<std::string, MsprobeCell>> out;
  std::vector<MsprobeCell> cells;
  for (size_t i = 0; i < table.size(); ++i) {
    table.row(i, cells);
    EXPECT_EQ(cells.size(), table.header().size());
    auto& row = out[cells[0].text];
    for (size_t c = 0; c < cells.size(); ++c) row[table.header()[c]] = cells[c];
  }
  return out;
}

TEST(PythonFloat, SpellsAsPythonRepr) {
  const std::pair<double, const char*> cases[] = {
      {0.0, "0.0"},          {1.0, "1.0"},         {0.5, "0.5"},       {-2.5e-7, "-2.5e-07"},
      {1e-05, "1e-05"},      {0.0001, "0.0001"},   {1e16, "1e+16"},    {1e15, "1000000000000000.0"},
      {123456789.0, "123456789.0"}, {0.1 + 0.2, "0.30000000000000004"}, {1.5e300, "1.5e+300"},
      {12.123519897460938, "12.123519897460938"}, {-0.0026798248291015625, "-0.0026798248291015625"}};
  for (const auto& [v, s] : cases) EXPECT_EQ(report::python_float(v), s) << v;
  EXPECT_EQ(report::python_float(std::nan("")), "nan");
  EXPECT_EQ(report::python_float(-INFINITY), "-inf");
}

TEST(MsprobeTable, TensorModeWordsWhereNoNumberIsComputed) {
  MemorySource g, t;
  const float nan = std::nanf("");
  g.add("same", {1, 2, 3, 4});
  t.add("same", {1, 2, 3, 4});
  g.add("one", {2}, {1});
  t.add("one", {2.5}, {1});
  g.add("shape", {1, 2, 3, 4});
  t.add("shape", {1, 2, 3, 4, 5});
  g.add("nans", {1, nan, 3, 4});
  t.add("nans", {1, 2, 3, 4});
  g.add("far", {1, 2, 3, 4});
  t.add("far", {-1, 5, 0, 9});
  t.add("only_target", {1, 2});
  t.name_natively("far", {"Functional.linear.0.forward.output.0", true});
  g.name_natively("far", {"Functional.linear.0.forward.output.0", false});
  const CompareResult res = compare(g, t);
  const MsprobeTable table(res, g, t);
  ASSERT_EQ(table.mode(), MsprobeMode::kTensor);
  EXPECT_EQ(table.header().back(), "Data_name");
  auto rows = cells_by_name(table);
  ASSERT_EQ(rows.size(), 6u);

  EXPECT_EQ(rows["same"]["Cosine"].text, "1.0");
  EXPECT_EQ(rows["same"]["Cosine"].kind, MsprobeCell::Kind::kNumber);
  EXPECT_EQ(rows["same"]["Result"].text, "pass");
  EXPECT_EQ(rows["same"]["Err_message"].text, "[]");
  EXPECT_EQ(rows["same"]["Data_name"].text, "['same.pt', 'same.pt']");
  EXPECT_EQ(rows["same"]["NPU Dtype"].text, "torch.float32");
  EXPECT_EQ(rows["same"]["NPU Requires_grad"].text, "N/A");
  EXPECT_TRUE(rows["same"]["Requires_grad Consistent"].flag);

  EXPECT_EQ(rows["one"]["Cosine"].text, "unsupported");  // msprobe squeezes one element to 0-d
  EXPECT_EQ(rows["one"]["One Thousandth Err Ratio"].text, "unsupported");
  EXPECT_EQ(rows["one"]["MaxAbsErr"].text, "0.5");

  for (const char* col : {"Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "Five Thousandths Err Ratio"}) {
    EXPECT_EQ(rows["shape"][col].text, "shape unmatched") << col;
    EXPECT_EQ(rows["nans"][col].text, "N/A") << col;
    EXPECT_EQ(rows["only_target"][col].text, "unsupported") << col;
  }
  EXPECT_EQ(rows["only_target"]["Bench Name"].text, "N/A");
  EXPECT_EQ(rows["only_target"]["Bench max"].text, "N/A");
  EXPECT_EQ(rows["only_target"]["Result"].text, "error");
  EXPECT_EQ(rows["only_target"]["Err_message"].text, "[\"error: No bench data matched.\"]");
  EXPECT_EQ(rows["only_target"]["Data_name"].text, "['only_target.pt', 'N/A']");

  // Named as the tool that wrote it names it; its requires_grad; a failing verdict is msprobe's "error".
  const auto& far = rows["Functional.linear.0.forward.output.0"];
  EXPECT_EQ(far.at("Bench Name").text, "Functional.linear.0.forward.output.0");
  EXPECT_EQ(far.at("NPU Requires_grad").text, "True");
  EXPECT_EQ(far.at("Bench Requires_grad").text, "False");
  EXPECT_FALSE(far.at("Requires_grad Consistent").flag);
  EXPECT_EQ(far.at("Result").text, "error");
  EXPECT_EQ(far.at("Err_message").text.rfind("[\"error: ", 0), 0u) << far.at("Err_message").text;
}

TEST(MsprobeTable, StatisticsModeDifferencesAsMsprobeWritesThem) {
  MemorySource g, t;
  g.add_stats("a", 2.0, -1.0, 0.0, 4.0);
  t.add_stats("a", 2.0, -1.5, 0.25, 5.0);
  const CompareResult res = compare(g, t);
  const MsprobeTable table(res, g, t);
  ASSERT_EQ(table.mode(), MsprobeMode::kStatistics);
  EXPECT_EQ(table.header()[8], "Max diff");
  EXPECT_EQ(table.header().back(), "NPU_Stack_Info");
  auto rows = cells_by_name(table);
  const auto& a = rows["a"];
  EXPECT_EQ(a.at("Max diff").text, "0");  // equal values: msprobe's "0", and "0" relative
  EXPECT_EQ(a.at("MaxRelativeErr").text, "0");
  EXPECT_EQ(a.at("Min diff").text, "-0.5");
  EXPECT_EQ(a.at("MinRelativeErr").text, "50.0%");
  EXPECT_EQ(a.at("MinRelativeErr").kind, MsprobeCell::Kind::kNumText);
  EXPECT_EQ(a.at("MeanRelativeErr").text, "inf");  // golden 0: msprobe's inf
  EXPECT_EQ(a.at("NormRelativeErr").text, "25.0%");
  EXPECT_EQ(a.at("NPU l2norm").text, "5.0");
  EXPECT_EQ(a.at("Bench min").text, "-1.0");
}

TEST(MsprobeFiles, CsvAndXlsxAreWrittenAndABadPathIsNamed) {
  MemorySource g, t;
  g.add("x,y", {1, 2});
  t.add("x,y", {1, 3});
  const CompareResult res = compare(g, t);
  parity_test::TempDir dir;
  const std::string csv = (dir.path() / "r.csv").string();
  std::FILE* f = std::fopen(csv.c_str(), "w");
  ASSERT_TRUE(report::write_msprobe_csv(res, g, t, f).ok());
  std::fclose(f);
  std::ifstream in(csv);
  std::string header, line;
  std::getline(in, header);
  std::getline(in, line);
  EXPECT_EQ(header.rfind("NPU Name,Bench Name,NPU Dtype,", 0), 0u) << header;
  EXPECT_EQ(line.rfind("\"x,y\",\"x,y\",torch.float32,torch.float32,[2],[2],N/A,N/A,", 0), 0u) << line;

  const std::string xlsx = (dir.path() / "r.xlsx").string();
  ASSERT_TRUE(report::write_msprobe_xlsx(res, g, t, xlsx).ok());
  std::ifstream x(xlsx, std::ios::binary);
  char magic[2] = {};
  x.read(magic, 2);
  EXPECT_EQ(std::string(magic, 2), "PK");  // a zip: the workbook
  EXPECT_FALSE(std::filesystem::exists(xlsx + ".partial"));

  const std::string bad = (dir.path() / "missing" / "r.xlsx").string();
  const Status st = report::write_msprobe_xlsx(res, g, t, bad);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(bad), std::string::npos) << st.message();
}

}  // namespace
}  // namespace parity
