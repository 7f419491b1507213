// compare_runs (parity/compare_runs.h), the library's compare pipeline, and its one serializer
// (compare_report_to_json, schema parity.compare/1): the JSON's shape and non-finite encoding; the run
// verdict, the exit code and the headline read one value.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/memory_source.h"
#include "parity/compare_runs.h"
#include "parity/exit_codes.h"
#include "parity/thresholds.h"

namespace parity {
namespace {

using test::compare_options;
using test::MemorySource;
using test::ramp;

TEST(CompareJson, SchemaShapeAndNonFiniteEncoding) {
  MemorySource g, t;
  g.add("a", ramp(16));
  t.add("a", ramp(16));
  g.add("one", {2.0f});
  t.add("one", {2.5f});
  g.add("gone", ramp(4));
  t.add("new", ramp(4));
  t.add_problem(Status::Corrupt("t/x.safetensors: header length 99999 exceeds file size 12"));
  CompareRunOptions options;
  options.compare = compare_options();
  Result<CompareReport> r = compare_runs(g, t, options);
  ASSERT_TRUE(r.ok());
  nlohmann::json j = compare_report_to_json(*r);
  EXPECT_EQ(j["schema"], "parity.compare/1");
  for (const char* key : {"golden", "target", "thresholds", "summary", "rows", "unmatched", "problems", "notes"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["golden"]["source"], "memory");
  EXPECT_TRUE(j["golden"]["fingerprint"].is_null());
  EXPECT_EQ(j["summary"]["rows"], 2);
  // 2.0 vs 2.5 in f32 is a 25 % change, 4e6 times fp32 rounding: structural, a failure under the default
  // noise-model policy (the fixed thresholds alone would only have warned on it); the unreadable target
  // file makes the whole run an error.
  EXPECT_EQ(j["summary"]["verdict"], "error");
  EXPECT_EQ(j["summary"]["policy"], "noise-model");
  EXPECT_EQ(j["summary"]["exit_code"], 1);
  EXPECT_EQ(j["rows"][1]["verdict"], "fail");
  EXPECT_EQ(j["rows"][1]["fixed_verdict"], "warn");
  EXPECT_EQ(j["unmatched"]["golden"][0]["name"], "gone");
  EXPECT_EQ(j["unmatched"]["target"][0]["name"], "new");
  EXPECT_EQ(j["problems"][0]["side"], "target");
  EXPECT_EQ(j["problems"][0]["code"], "Corrupt");
  EXPECT_EQ(j["thresholds"]["bf16"]["max_abs_fail"], "Infinity");
  const nlohmann::json& rows = j["rows"];
  ASSERT_EQ(rows.size(), 2u);
  const nlohmann::json& a = rows[0];
  for (const char* key : {"name", "target_name", "target_order", "match", "mode", "golden", "target", "module", "op", "direction",
                          "role", "index", "step", "rank", "order", "shape_differs", "threshold_dtype", "metrics",
                          "stats", "checksum_equal", "verdict", "reason", "fixed_verdict", "fixed_reason", "noise",
                          "noise_ratio"}) {
    EXPECT_TRUE(a.contains(key)) << key;
  }
  EXPECT_EQ(a["mode"], "tensor");
  EXPECT_EQ(a["golden"]["dtype"], "f32");
  EXPECT_EQ(a["golden"]["shape"], nlohmann::json::array({16}));
  EXPECT_EQ(a["metrics"]["sqnr_db"], "Infinity");  // identical
  EXPECT_NEAR(a["metrics"]["cosine"].get<double>(), 1.0, 1e-15);
  EXPECT_TRUE(a["stats"].is_null());
  EXPECT_TRUE(a["checksum_equal"].is_null());
  EXPECT_EQ(a["noise"], "noise");
  EXPECT_EQ(a["noise_ratio"], 0.0);
  EXPECT_EQ(rows[1]["metrics"]["cosine"], "NaN");  // single element: unsupported, as msprobe
  EXPECT_EQ(a["metrics"]["kl_computed"], false);
  EXPECT_EQ(a["metrics"]["kl"], "NaN");
  EXPECT_TRUE(a["metrics"].contains("kl_rows"));
  // Every number in the document is finite (it must survive a strict JSON parser).
  const std::string text = j.dump();
  EXPECT_EQ(text.find("NaN,"), std::string::npos);
  EXPECT_NO_THROW({
    const auto doc = nlohmann::json::parse(text);
    EXPECT_TRUE(doc.is_object());
  });
}

// The headline, the exit code and summary.verdict are one value (docs/cli.md "Exit codes").
TEST(CompareRuns, VerdictExitCodeAndHeadlineAgree) {
  struct Case { float target_scale; bool fail_on_warn; const char* verdict; int exit_code; const char* headline; };
  // ramp(64) vs itself: pass; 1e-3 relative in f32 (16,000 u): structural, fail
  for (const Case& c : {Case{1.0f, false, "pass", kExitOk, "PASSED"}, Case{1.001f, false, "fail", kExitDifferences, "FAILED"}}) {
    MemorySource g, t;
    g.add("x", ramp(64));
    t.add("x", ramp(64, c.target_scale));
    CompareRunOptions o;
    o.compare = compare_options();
    o.fail_on_warn = c.fail_on_warn;
    Result<CompareReport> r = compare_runs(g, t, o);
    ASSERT_TRUE(r.ok());
    EXPECT_STREQ(run_verdict_name(*r), c.verdict);
    EXPECT_EQ(r->exit_code, c.exit_code);
    EXPECT_STREQ(run_headline(*r), c.headline);
    EXPECT_EQ(compare_report_to_json(*r)["summary"]["exit_code"], c.exit_code);
  }
}

// Nothing usable is no answer: exit 2, NO INPUT, never an empty pass.
TEST(CompareRuns, NoUsableInputAndFiltersThatMatchNothingExit2) {
  MemorySource g, empty;
  g.add("x", ramp(8));
  CompareRunOptions o;
  o.compare = compare_options();
  Result<CompareReport> r = compare_runs(g, empty, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, kExitUsage);
  EXPECT_STREQ(run_headline(*r), "NO INPUT");
  EXPECT_STREQ(run_verdict_name(*r), "no_input");
  MemorySource t;
  t.add("x", ramp(8));
  o.compare.include = {"^nothing$"};
  r = compare_runs(g, t, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, kExitUsage);
  EXPECT_NE(r->no_input.find("no record matches the filters --include '^nothing$'"), std::string::npos) << r->no_input;
}

// The pipeline classifies the rows once, before the verdict policy reads their classes.
TEST(CompareRuns, RowsAreClassifiedBeforeTheirVerdicts) {
  MemorySource g, t;
  g.add("x", ramp(64));
  t.add("x", ramp(64, 1.001f));
  CompareRunOptions o;
  o.compare = compare_options();
  Result<CompareReport> r = compare_runs(g, t, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->result.classified);
  EXPECT_EQ(r->result.rows[0].noise, NoiseClass::kStructural);
  EXPECT_EQ(r->result.rows[0].verdict, Verdict::kFail);
}

}  // namespace
}  // namespace parity
