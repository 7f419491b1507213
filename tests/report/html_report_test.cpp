// tests/report/html_report_test.cpp — the self-contained HTML report: escaping of strings from dumps,
// inlining of every asset, the data envelope, and errors that name the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/synth.h"
#include "parity/html_report.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

size_t count_of(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

json compare_result(const std::string& name) {
  return json{{"schema", "parity.compare/1"},
              {"summary", {{"rows", 1}, {"pass", 0}, {"fail", 1}, {"verdict", "fail"}}},
              {"rows", json::array({json{{"name", name}, {"verdict", "fail"}, {"reason", "<b>x</b> & y"}}})}};
}

// The JSON text between <script type="application/json" id="parity-data"> and </script>.
std::string data_blob(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"parity-data\">";
  const size_t a = html.find(open);
  EXPECT_NE(a, std::string::npos);
  const size_t b = html.find("</script>", a);
  return html.substr(a + open.size(), b - a - open.size());
}

// A fresh folder named after the running test, in the process's scratch directory.
fs::path temp_dir() {
  return parity_test::fresh_temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
}

}  // namespace

TEST(EscapeJsonForScript, EscapesEveryCharacterThatCouldEndTheScript) {
  const std::string in = "{\"n\":\"</script><b>&\xE2\x80\xA8\xE2\x80\xA9\"}";
  const std::string out = parity::escape_json_for_script(in);
  EXPECT_EQ(out, "{\"n\":\"\\u003c/script\\u003e\\u003cb\\u003e\\u0026\\u2028\\u2029\"}");
  // Still JSON, and the same value.
  EXPECT_EQ(json::parse(out), json::parse(in));
}

TEST(EscapeJsonForScript, LeavesOtherUtf8Alone) {
  const std::string in = "{\"n\":\"\xE2\x80\x94 \xCE\xB4p \xE2\x80\"}";  // em dash, δp, truncated sequence
  EXPECT_EQ(parity::escape_json_for_script(in), in);
}

TEST(HtmlReport, XssNameTravelsOnlyAsEscapedJson) {
  json r = compare_result("<script>alert(1)</script>");
  auto html = parity::render_html_report({{"res.json", &r}});
  ASSERT_TRUE(html.ok()) << html.status().ToString();
  // Exactly three script elements: data, charting library, report script; nothing from the data opens
  // or closes one.
  EXPECT_EQ(count_of(*html, "<script"), 3u);
  EXPECT_EQ(count_of(*html, "</script"), 3u);
  EXPECT_EQ(html->find("alert(1)</script>"), std::string::npos);
  EXPECT_EQ(html->find("<b>x</b>"), std::string::npos);
  const json env = json::parse(data_blob(*html));
  EXPECT_EQ(env["schema"], "parity.report-data/1");
  ASSERT_EQ(env["inputs"].size(), 1u);
  EXPECT_EQ(env["inputs"][0]["origin"], "res.json");
  EXPECT_EQ(env["inputs"][0]["result"], r);  // the result round-trips exactly
}

TEST(HtmlReport, InlinesEveryAssetAndLeavesNoPlaceholder) {
  json r = compare_result("a");
  auto html = parity::render_html_report({{"", &r}});
  ASSERT_TRUE(html.ok()) << html.status().ToString();
  EXPECT_EQ(html->find("<!--@"), std::string::npos);
  EXPECT_NE(html->find("echarts"), std::string::npos);          // the charting library
  EXPECT_NE(html->find("P.renderTable"), std::string::npos);    // the report's script
  EXPECT_NE(html->find(".vt-row"), std::string::npos);          // the style
  EXPECT_NE(html->find("<title>parity report: fail</title>"), std::string::npos);
  // Nothing refers to another file or host.
  EXPECT_EQ(html->find("<script src"), std::string::npos);
  EXPECT_EQ(html->find("<link"), std::string::npos);
  EXPECT_GT(html->size(), 500000u);  // the library really is inside
}

TEST(HtmlReport, TitleIsEscaped) {
  json r = compare_result("a");
  parity::HtmlReportOptions o;
  o.title = "</title><script>x</script>";
  auto html = parity::render_html_report({{"", &r}}, o);
  ASSERT_TRUE(html.ok());
  EXPECT_NE(html->find("<title>&lt;/title&gt;&lt;script&gt;x&lt;/script&gt;</title>"), std::string::npos);
}

TEST(HtmlReport, InvalidUtf8InANameIsReplacedNotFatal) {
  json r = compare_result(std::string("bad\xFF\xFEname"));
  auto html = parity::render_html_report({{"", &r}});
  ASSERT_TRUE(html.ok()) << html.status().ToString();
  const json env = json::parse(data_blob(*html));
  EXPECT_EQ(env["inputs"][0]["result"]["rows"][0]["name"], "bad\xEF\xBF\xBD\xEF\xBF\xBDname");
}

TEST(HtmlReport, SeveralResultsKeepTheirOrder) {
  json a = compare_result("a");
  json b = {{"schema", "parity.curve/1"}, {"metrics", json::array()}};
  auto html = parity::render_html_report({{"a.json", &a}, {"b.json", &b}});
  ASSERT_TRUE(html.ok());
  const json env = json::parse(data_blob(*html));
  ASSERT_EQ(env["inputs"].size(), 2u);
  EXPECT_EQ(env["inputs"][1]["result"]["schema"], "parity.curve/1");
}

TEST(HtmlReport, RejectsWhatIsNotAResultNamingTheInput) {
  json not_obj = json::array();
  json no_schema = {{"rows", 1}};
  json foreign = {{"schema", "other/1"}};
  for (const json* j : {&not_obj, &no_schema, &foreign}) {
    auto html = parity::render_html_report({{"in.json", j}});
    ASSERT_FALSE(html.ok());
    EXPECT_EQ(html.status().code(), parity::StatusCode::kInvalid);
    EXPECT_EQ(html.status().message().rfind("in.json: ", 0), 0u) << html.status().message();
  }
  EXPECT_FALSE(parity::render_html_report({}).ok());
}

TEST(LoadResultJson, ErrorsNameTheFile) {
  const fs::path dir = temp_dir();
  auto missing = parity::load_result_json((dir / "missing.json").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing.json"), std::string::npos);

  std::ofstream(dir / "broken.json") << "{\"schema\": \"parity.compare/1\", ";
  auto broken = parity::load_result_json((dir / "broken.json").string());
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("broken.json: not valid JSON"), std::string::npos);

  std::ofstream(dir / "plain.json") << "{\"a\": 1}";
  auto plain = parity::load_result_json((dir / "plain.json").string());
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("plain.json: no \"schema\""), std::string::npos);

  std::ofstream(dir / "good.json") << compare_result("x").dump();
  auto good = parity::load_result_json((dir / "good.json").string());
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ((*good)["rows"][0]["name"], "x");
  fs::remove_all(dir);
}

TEST(WriteHtmlReport, WritesTheFileAndReportsUnwritablePaths) {
  const fs::path dir = temp_dir();
  const fs::path out = dir / "r.html";
  std::vector<json> results = {compare_result("x")};
  ASSERT_TRUE(parity::write_html_report(out.string(), results).ok());
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str().rfind("<!DOCTYPE html>", 0), 0u);
  // No temporary left beside it.
  size_t files = 0;
  for (auto& e : fs::directory_iterator(dir)) { (void)e; ++files; }
  EXPECT_EQ(files, 1u);

  const std::string bad = (dir / "no" / "such" / "dir" / "r.html").string();
  parity::Status st = parity::write_html_report(bad, results);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), parity::StatusCode::kIOError);
  EXPECT_NE(st.message().find(bad), std::string::npos);
  fs::remove_all(dir);
}

// Issue 14: the temporary beside the report was "<report>.tmp.<pid>", opened with truncation, so a
// symbolic link planted under that name made parity overwrite the file the link points to.
TEST(WriteHtmlReport, DoesNotWriteThroughAPlantedSymlink) {
  const fs::path dir = temp_dir();
  const fs::path outside = dir / "outside";
  fs::create_directories(outside);
  const fs::path victim = outside / "victim.txt";
  { std::ofstream(victim) << "keep me"; }
  const fs::path out = dir / "r.html";
  fs::create_symlink(victim, fs::path(out.string() + ".tmp." + std::to_string(::getpid())));
  std::vector<json> results = {compare_result("x")};
  parity::Status st = parity::write_html_report(out.string(), results);
  std::ifstream in(victim);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_TRUE(ss.str() == "keep me") << "the file the planted link points to was overwritten";
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_FALSE(fs::is_symlink(out));
  std::ifstream rep(out);
  std::stringstream rs;
  rs << rep.rdbuf();
  EXPECT_EQ(rs.str().rfind("<!DOCTYPE html>", 0), 0u);
  fs::remove_all(dir);
}

// A compare result with more rows than max_rows embeds the worst ones (verdict, then noise ratio) and the
// first divergence, in execution order, says so in "report_rows" and a note, and leaves smaller results
// and non-compare results whole.
TEST(HtmlReport, LargeCompareResultsEmbedTheWorstRowsAndSaySo) {
  json r = compare_result("x");
  r["rows"] = json::array();
  for (int i = 0; i < 100; ++i) r["rows"].push_back({{"name", "r" + std::to_string(i)}, {"verdict", "pass"}, {"noise_ratio", i * 0.01}});
  r["rows"][70] = {{"name", "r70"}, {"verdict", "fail"}, {"noise_ratio", 50.0}};
  r["rows"][20] = {{"name", "r20"}, {"verdict", "warn"}, {"noise_ratio", 8.0}};
  r["rows"][90] = {{"name", "r90"}, {"verdict", "fail"}, {"noise_ratio", "Infinity"}};
  r["rows"][5] = {{"name", "r5"}, {"verdict", "pass"}, {"noise_ratio", 0.0}};
  r["first_divergence"] = {{"name", "r5"}};
  parity::HtmlReportOptions o;
  o.max_rows = 5;
  auto html = parity::render_html_report({{"", &r}}, o);
  ASSERT_TRUE(html.ok()) << html.status().ToString();
  const json data = json::parse(data_blob(*html));
  const json& shown = data["inputs"][0]["result"];
  std::vector<std::string> names;
  for (const json& row : shown["rows"]) names.push_back(row["name"]);
  // r5 (first divergence), the two fails and the warn, then the worst pass (r99), in row order.
  EXPECT_EQ(names, (std::vector<std::string>{"r5", "r20", "r70", "r90", "r99"}));
  EXPECT_EQ(shown["report_rows"]["shown"], 5);
  EXPECT_EQ(shown["report_rows"]["total"], 100);
  EXPECT_NE(shown["notes"].back().get<std::string>().find("shows 5 of 100 rows"), std::string::npos);
  EXPECT_EQ(shown["summary"], r["summary"]);  // the counts stay the whole run's
  o.max_rows = 100;
  auto whole = parity::render_html_report({{"", &r}}, o);
  EXPECT_EQ(json::parse(data_blob(*whole))["inputs"][0]["result"]["rows"].size(), 100u);
  o.max_rows = 0;
  auto all = parity::render_html_report({{"", &r}}, o);
  EXPECT_FALSE(json::parse(data_blob(*all))["inputs"][0]["result"].contains("report_rows"));
}

// `compare --html` picks the rows from the report before serializing any (compare_report_for_html): the
// page must be the very page a saved --json of the same report gives, trimmed by render_html_report —
// with rows named like the first divergence, every verdict, and noise ratios that are NaN or infinite.
TEST(HtmlReport, ACompareReportTrimmedBeforeSerializingGivesTheSamePage) {
  parity::test::Synth s;
  const double ratios[] = {0.5, 3.0, std::nan(""), INFINITY, -INFINITY, 0.0, 12.0, 1e300};
  for (int i = 0; i < 60; ++i) {
    parity::CompareRow& row = s.row("layers." + std::to_string(i % 20), "Linear", "forward", "output", 0, 1e-4,
                                    parity::DType::kF32, parity::DType::kF32, 0, i / 20);
    row.verdict = static_cast<parity::Verdict>(i % 4);
    row.noise_ratio = ratios[i % 8];
  }
  parity::CompareReport report;
  report.result = s.result;
  parity::FirstDivergence fd;
  fd.name = s.result.rows[27].golden->name;  // three rows (ranks 0-2) share it
  report.findings.analysis.first_divergence = fd;
  for (size_t max_rows : {size_t{1}, size_t{7}, size_t{25}, size_t{60}, size_t{100}}) {
    parity::HtmlReportOptions o;
    o.max_rows = max_rows;
    const json whole = parity::compare_report_to_json(report);
    const json picked = parity::compare_report_for_html(report, o);
    auto from_whole = parity::render_html_report({{"", &whole}}, o);
    auto from_picked = parity::render_html_report({{"", &picked}}, o);
    ASSERT_TRUE(from_whole.ok() && from_picked.ok());
    EXPECT_EQ(*from_picked, *from_whole) << "max_rows " << max_rows;
    EXPECT_EQ(picked["rows"].size(), std::min<size_t>(max_rows, 60));
  }
}
