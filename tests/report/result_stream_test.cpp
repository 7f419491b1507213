// tests/report/result_stream_test.cpp — a result file read for a report row by row
// (src/report/result_stream.cpp): a large comparison keeps exactly the rows trimming the whole document
// keeps, whatever the order of its keys; everything else loads as json::parse reads it; bad files are
// errors naming the file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/test_util.h"
#include "parity/html_report.h"
#include "parity/json_depth.h"
#include "report/report_rows.h"

namespace fs = std::filesystem;
using nlohmann::json;
using parity_test::read_file;
using parity_test::TempDir;
using parity_test::write_file;

namespace {

constexpr size_t kCap = 5000;  // HtmlReportOptions::max_rows' default

const char* verdict_of(size_t i) { return i % 7 == 0 ? "error" : i % 5 == 0 ? "fail" : i % 3 == 0 ? "warn" : "pass"; }

// Nine ratio spellings, many rows of each, so rows of equal severity abound and the index decides.
void set_ratio(json& row, size_t i) {
  switch (i % 9) {
    case 0: row["noise_ratio"] = "Infinity"; break;
    case 1: row["noise_ratio"] = "NaN"; break;
    case 2: row["noise_ratio"] = "-Infinity"; break;
    case 3: break;  // no ratio
    case 4: row["noise_ratio"] = 0.5; break;
    case 5: row["noise_ratio"] = 2; break;  // an integer in the JSON
    case 6: row["noise_ratio"] = 3.5; break;
    case 7: row["noise_ratio"] = 1e300; break;
    default: row["noise_ratio"] = -2.0; break;
  }
}

// A comparison of n rows of mixed verdicts (of 12,000: 1,715 error, 2,057 fail, 2,743 warn, so the cap
// of 5,000 cuts through the warnings, where rows of equal ratio compete), whose first divergence is `first`. Rows nest objects, arrays and a "rows"
// key of their own, which is not the document's.
json big_compare(size_t n, const std::string& first) {
  json rows = json::array();
  for (size_t i = 0; i < n; ++i) {
    json row = {{"index", i}, {"name", "layer." + std::to_string(i)}, {"verdict", verdict_of(i)}};
    set_ratio(row, i);
    row["stats"] = {{"golden", {{"mean", 0.25 * static_cast<double>(i)}, {"hist", {1, 2, 3}}}}, {"rows", {i, i}}};
    rows.push_back(std::move(row));
  }
  return json{{"schema", "parity.compare/1"},
              {"summary", {{"rows", n}, {"verdict", "FAILED"}}},
              {"first_divergence", {{"row", 0}, {"name", first}, {"event", 3}}},
              {"notes", {"a note from compare"}},
              {"suspects", json::array({{{"name", first}, {"score", 1.5}}})},
              {"rows", std::move(rows)}};
}

// The document's text with the keys `last` at its end, in that order (json objects dump their keys sorted,
// compare writes them so; another writer may not).
std::string text_with_keys_last(const json& doc, const std::vector<std::string>& last) {
  std::string text = "{";
  auto append = [&](const std::string& k) {
    if (text.size() > 1) text += ",\n";
    text += json(k).dump() + ": " + doc.at(k).dump();
  };
  for (const auto& [k, v] : doc.items())
    if (std::find(last.begin(), last.end(), k) == last.end()) append(k);
  for (const std::string& k : last) append(k);
  return text + "}\n";
}

// The rule written out independently of report_rows: the names of the rows a report keeps, by a full sort.
std::vector<std::string> kept_names_by_full_sort(const json& rows, const std::string& first) {
  auto ratio = [](const json& row) {
    if (!row.contains("noise_ratio")) return -1.0;
    const json& r = row["noise_ratio"];
    if (r.is_number()) return r.get<double>();
    return r == "Infinity" ? std::numeric_limits<double>::infinity() : -1.0;
  };
  auto rank = [](const json& row) {
    const std::string v = row["verdict"];
    return v == "error" ? 3 : v == "fail" ? 2 : v == "warn" ? 1 : 0;
  };
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool fa = rows[a]["name"] == first, fb = rows[b]["name"] == first;
    if (fa != fb) return fa;
    if (rank(rows[a]) != rank(rows[b])) return rank(rows[a]) > rank(rows[b]);
    return ratio(rows[a]) > ratio(rows[b]);  // stable: equal severities stay in index order
  });
  order.resize(kCap);
  std::sort(order.begin(), order.end());
  std::vector<std::string> names;
  for (size_t i : order) names.push_back(rows[i]["name"]);
  return names;
}

// "" when a == b, else a few characters of each from where they part (the texts are megabytes long).
std::string first_difference(const std::string& a, const std::string& b) {
  if (a == b) return "";
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const size_t from = i > 40 ? i - 40 : 0;
  return "at byte " + std::to_string(i) + ": \"" + a.substr(from, 120) + "\" vs \"" + b.substr(from, 120) + "\"";
}

std::vector<std::string> names_of(const json& rows) {
  std::vector<std::string> names;
  for (const json& r : rows) names.push_back(r["name"]);
  return names;
}

}  // namespace

// (a) 12,000 rows, the first divergence a passing row with the lowest ratio (kept only by the first rule),
// the file's "first_divergence" and "schema" after its "rows" (read twice) or sorted as compare writes them
// (read once): both equal trim_compare_rows of the whole document, and that is the rule's choice.
TEST(LoadResultForReport, LargeComparisonKeepsWhatTrimmingTheWholeDocumentKeeps) {
  TempDir tmp;
  const std::string first = "layer.11999";  // pass, ratio -Infinity
  const json doc = big_compare(12000, first);
  const fs::path late = tmp / "late.json";
  const fs::path sorted = tmp / "sorted.json";
  write_file(late, text_with_keys_last(doc, {"first_divergence", "schema"}));
  write_file(sorted, doc.dump(2));
  ASSERT_GT(read_file(late).find("\"first_divergence\""), read_file(late).find("\"rows\""));

  const json expected = parity::report_rows::trim_compare_rows(doc, kCap);
  for (const fs::path& p : {late, sorted}) {
    auto streamed = parity::load_result_for_report(p.string(), kCap);
    ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
    EXPECT_EQ(first_difference(streamed->dump(), expected.dump()), "") << p;
  }

  // What was kept is the rule's choice, in execution order, with the first divergence and the marks.
  const json& rows = expected["rows"];
  ASSERT_EQ(rows.size(), kCap);
  EXPECT_TRUE(names_of(rows) == kept_names_by_full_sort(doc["rows"], first));
  for (size_t k = 1; k < rows.size(); ++k) ASSERT_LT(rows[k - 1]["index"], rows[k]["index"]) << k;
  EXPECT_EQ(rows.back()["name"], first);
  EXPECT_EQ(expected["report_rows"]["shown"], kCap);
  EXPECT_EQ(expected["report_rows"]["total"], 12000);
  EXPECT_EQ(expected["report_tree"]["rows"], 12000);  // the model tree's index of every row, kept or not
  EXPECT_EQ(expected["notes"].size(), 2u);
  EXPECT_NE(expected["notes"][1].get<std::string>().find("5000 of 12000 rows"), std::string::npos);
  EXPECT_EQ(expected["summary"], doc["summary"]);
  EXPECT_EQ(expected["suspects"], doc["suspects"]);

  // The first divergence's row is kept only because of its name: ranked without it, it goes, so a read
  // that missed the name after the rows could not give the expected rows.
  json unnamed = doc;
  unnamed["first_divergence"] = nullptr;
  const auto without = names_of(parity::report_rows::trim_compare_rows(unnamed, kCap)["rows"]);
  EXPECT_EQ(std::find(without.begin(), without.end(), first), without.end());
}

// The page drawn from the streamed result is the page drawn from the whole document.
TEST(LoadResultForReport, TheReportIsTheSameAsFromTheWholeDocument) {
  TempDir tmp;
  const json doc = big_compare(12000, "layer.11999");
  const fs::path p = tmp / "late.json";
  write_file(p, text_with_keys_last(doc, {"first_divergence", "schema"}));
  auto streamed = parity::load_result_for_report(p.string(), kCap);
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  auto from_stream = parity::render_html_report({{p.string(), &*streamed}});
  if (!from_stream.ok() && from_stream.status().code() == parity::StatusCode::kUnsupported)
    GTEST_SKIP() << from_stream.status().message();
  ASSERT_TRUE(from_stream.ok()) << from_stream.status().ToString();
  auto from_whole = parity::render_html_report({{p.string(), &doc}});
  ASSERT_TRUE(from_whole.ok()) << from_whole.status().ToString();
  EXPECT_TRUE(*from_stream == *from_whole);
}

// (b) Results a report does not trim load as json::parse reads them: small comparisons, other schemas
// with many rows (the schema before the rows: kept as read; after them: a second read keeps them all), a "rows" that is no array, a
// repeated "rows" (the last wins), and any result when the cap is 0.
TEST(LoadResultForReport, OtherResultsAndSmallComparisonsLoadAsParsed) {
  TempDir tmp;
  json curve = big_compare(12000, "layer.3");
  curve["schema"] = "parity.curve/1";
  std::string big_rows = big_compare(12000, "x")["rows"].dump();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"small.json", text_with_keys_last(big_compare(100, "layer.50"), {"first_divergence", "schema"})},
      {"at_cap.json", big_compare(kCap, "layer.9").dump()},
      {"curve_late.json", text_with_keys_last(curve, {"schema"})},
      {"curve_schema_first.json", text_with_keys_last(curve, {"rows"})},
      {"rows_number.json", R"({"schema": "parity.compare/1", "rows": 7, "summary": {"rows": [1, 2]}})"},
      {"rows_twice.json", "{\"schema\": \"parity.compare/1\", \"rows\": " + big_rows + ", \"rows\": [{\"name\": \"a\"}]}"},
      {"rows_then_number.json", "{\"schema\": \"parity.compare/1\", \"rows\": " + big_rows + ", \"rows\": 3}"},
      {"scalar_rows.json", R"({"schema": "parity.compare/1", "rows": [1, "two", null, [3], {"name": "x"}]})"},
      {"overflow.json", R"({"schema": "parity.overflow/1", "events": [{"name": "a", "rows": [1]}], "x": -1.5e-300})"},
  };
  for (const auto& [name, text] : cases) {
    const fs::path p = tmp / name;
    write_file(p, text);
    const json parsed = json::parse(text);
    auto for_report = parity::load_result_for_report(p.string(), kCap);
    ASSERT_TRUE(for_report.ok()) << name << ": " << for_report.status().ToString();
    EXPECT_TRUE(*for_report == parsed) << name;
    EXPECT_FALSE(for_report->contains("report_rows")) << name;
    auto whole = parity::load_result_json(p.string());
    ASSERT_TRUE(whole.ok()) << name << ": " << whole.status().ToString();
    EXPECT_TRUE(*whole == parsed) << name;
  }
  // No cap: every row of a large comparison.
  const json doc = big_compare(12000, "layer.11999");
  write_file(tmp / "all.json", doc.dump());
  auto all = parity::load_result_for_report((tmp / "all.json").string(), 0);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_TRUE(*all == doc);
}

// (c) Truncated text, nesting a million levels deep (refused at level 513 as it is read; nothing recurses),
// a FIFO and a missing file: each an error naming the file, from both loaders.
TEST(LoadResultForReport, BadInputsAreErrorsNamingTheFile) {
  TempDir tmp;
  const std::string whole = big_compare(12000, "layer.1").dump();
  const std::string deep_rows = "{\"schema\": \"parity.compare/1\", \"rows\": [{\"name\": \"a\"}, " + std::string(1000000, '[');
  const std::string deep_top(1000000, '[');
  write_file(tmp / "truncated.json", whole.substr(0, whole.size() / 2));
  write_file(tmp / "deep_top.json", deep_top);
  write_file(tmp / "deep_rows.json", deep_rows);
  ASSERT_EQ(::mkfifo((tmp / "fifo.json").c_str(), 0600), 0);

  using Loader = parity::Result<json> (*)(const std::string&);
  const Loader loaders[] = {[](const std::string& p) { return parity::load_result_for_report(p, kCap); },
                            [](const std::string& p) { return parity::load_result_json(p); }};
  for (const Loader load : loaders) {
    const std::string truncated = (tmp / "truncated.json").string();
    auto t = load(truncated);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), parity::StatusCode::kInvalid);
    EXPECT_EQ(t.status().message().rfind(truncated + ": not valid JSON (", 0), 0u) << t.status().message();

    for (const auto& [name, text] : {std::pair{"deep_top.json", &deep_top}, std::pair{"deep_rows.json", &deep_rows}}) {
      const std::string p = (tmp / name).string();
      auto d = load(p);
      ASSERT_FALSE(d.ok()) << name;
      EXPECT_EQ(d.status().code(), parity::StatusCode::kInvalid);
      // The message the whole-text check gave: the same limit, the same byte.
      EXPECT_EQ(d.status().message(), p + ": " + parity::json_depth_problem(*text)) << name;
    }

    const fs::path fifo = tmp / "fifo.json";
    std::optional<parity::Result<json>> f;
    EXPECT_TRUE(parity_test::returns_within(10, fifo, [&] { f.emplace(load(fifo.string())); }));
    ASSERT_TRUE(f.has_value() && !f->ok());
    EXPECT_NE(f->status().message().find(fifo.string() + ": not a regular file (a FIFO)"), std::string::npos)
        << f->status().message();

    const std::string missing = (tmp / "missing.json").string();
    auto m = load(missing);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().message().rfind(missing + ": ", 0), 0u) << m.status().message();
  }
}

// The bounded selection and the whole-document trim agree at every cap, rows in any order of severity.
TEST(WorstRowsSelection, KeepsWhatThePartialSortKeepsAtEveryCap) {
  const json doc = big_compare(600, "layer.599");
  for (size_t cap : {size_t{1}, size_t{2}, size_t{50}, size_t{299}, size_t{599}}) {
    parity::report_rows::WorstRowsSelection selection(cap, "layer.599");
    for (const json& row : doc["rows"]) selection.add(row);
    EXPECT_EQ(selection.seen(), 600u);
    EXPECT_EQ(selection.kept(), cap);
    EXPECT_EQ(selection.take_rows(), parity::report_rows::trim_compare_rows(doc, cap)["rows"]) << cap;
  }
}
