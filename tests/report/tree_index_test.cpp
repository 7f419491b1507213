// tests/report/tree_index_test.cpp — the model tree's index of every row of a trimmed comparison
// (src/report/tree_index.cpp, docs/report.md "Data envelope"): each column decodes back to what the
// page reads from a full row (name, module, role, direction, verdict severity, noise ratio or the rel L2
// fallback, orders, rank, step, NaN/Inf statistics); integer columns as runs when shorter; attached by
// every path that trims rows.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/report_rows.h"
#include "report/tree_index.h"

using nlohmann::json;
using parity::report_rows::TreeIndexBuilder;

namespace {

// The page's decoding of one integer column (web/src/tree_index.js P.treeColumn).
std::vector<long long> decode(const json& c, size_t n, bool delta) {
  std::vector<long long> out;
  if (c.is_array()) {
    for (const json& v : c) out.push_back(v.get<long long>());
  } else {
    const json& runs = c.at("runs");
    for (size_t k = 0; k + 1 < runs.size(); k += 2) out.insert(out.end(), runs[k + 1].get<size_t>(), runs[k].get<long long>());
  }
  EXPECT_EQ(out.size(), n);
  if (delta)
    for (size_t i = 1; i < out.size(); ++i) out[i] += out[i - 1];
  return out;
}

std::string str(const json& ix, long long k) { return k < 0 ? "" : ix["strings"][static_cast<size_t>(k)].get<std::string>(); }

}  // namespace

TEST(TreeIndex, EveryColumnDecodesToWhatTheRowSays) {
  std::vector<json> rows = {
      {{"name", "model.layers.0.mlp/forward/output/0"}, {"module", "model.layers.0.mlp"}, {"role", "output"}, {"direction", "forward"},
       {"verdict", "pass"}, {"noise_ratio", 0.123456}, {"order", 0}, {"target_order", 0}, {"rank", 0}, {"step", 3}},
      {{"name", "model.layers.0.mlp/mul#1/forward/output/0"}, {"module", "model.layers.0.mlp"}, {"role", "output"}, {"direction", "forward"},
       {"verdict", "fail"}, {"noise_ratio", "Infinity"}, {"threshold_dtype", "bf16"}, {"metrics", {{"rel_l2", 0.5}, {"target_stats", {{"nan_count", 2}, {"pinf_count", 0}, {"min", "NaN"}}}}},
       {"order", 1}, {"target_order", 4}, {"rank", 0}, {"step", 3}},
      {{"name", "blocks.2.out.npy"}, {"verdict", "skipped"}, {"stats", {{"worst_rel", 0.25}}}, {"target", {{"dtype", "f16"}}}, {"order", 2}},
      {{"name", "model.layers.0.mlp/backward/output/0"}, {"module", "model.layers.0.mlp"}, {"role", "output"}, {"direction", "backward"},
       {"verdict", "warn"}, {"noise_ratio", 1234567.0}, {"order", 3}, {"target_order", 2}, {"rank", 0}, {"step", 3}},
  };
  TreeIndexBuilder b;
  for (const json& r : rows) b.add(r);
  const json ix = b.take({1, 3});
  EXPECT_EQ(ix["schema"], "parity.report-tree/2");
  EXPECT_EQ(ix["rows"], 4);
  EXPECT_EQ(ix["kept"], json({1, 3}));
  const auto head = decode(ix["head"], 4, false), tail = decode(ix["tail"], 4, false), module = decode(ix["module"], 4, false);
  const std::vector<std::string> names = {rows[0]["name"], rows[1]["name"], rows[2]["name"], rows[3]["name"]};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(tail[i] < 0 ? str(ix, head[i]) : str(ix, head[i]) + "/" + str(ix, tail[i]), names[i]) << i;
    EXPECT_EQ(str(ix, module[i]), rows[i].value("module", "")) << i;
  }
  EXPECT_EQ(str(ix, decode(ix["direction"], 4, false)[3]), "backward");
  EXPECT_EQ(decode(ix["verdict"], 4, false), (std::vector<long long>{0, 2, 3, 1}));  // an unknown verdict ranks as error
  // Noise ratios as the rows carry them, to 4 significant digits; "Infinity" kept; null where a row has
  // none — the page computes no noise units of its own (no rel L2 fallback, issue 32 §4).
  EXPECT_EQ(ix["noise_ratio"], json({0.1235, "Infinity", nullptr, 1235000.0}));
  EXPECT_FALSE(ix.contains("fallback"));
  EXPECT_EQ(decode(ix["order"], 4, true), (std::vector<long long>{0, 1, 2, 3}));
  EXPECT_EQ(decode(ix["target_order"], 4, true), (std::vector<long long>{0, 4, -1, 2}));
  EXPECT_EQ(decode(ix["rank"], 4, false), (std::vector<long long>{0, 0, -1, 0}));
  EXPECT_EQ(decode(ix["step"], 4, false), (std::vector<long long>{3, 3, -1, 3}));
  // NaN/Inf: only rows with a non-finite count, both sides' counts and extremes (null where absent).
  EXPECT_EQ(ix["nonfinite"]["row"], json({1}));
  EXPECT_EQ(ix["nonfinite"]["target"][0], json({2, 0, nullptr, nullptr, "NaN", nullptr}));
  EXPECT_EQ(ix["nonfinite"]["golden"][0], json({nullptr, nullptr, nullptr, nullptr, nullptr, nullptr}));
  EXPECT_EQ(b.size(), 0u);  // taken
}

// The tree places rows by the result's rows[].event and rows[].site (revision 1.8), never by parsing names:
// the index carries them as they are; a row of an older revision (no site) sits at its module, call 0.
TEST(TreeIndex, CarriesEachRowsEventAndSite) {
  std::vector<json> rows = {
      {{"name", "m.attn#1/softmax#0/forward/output/0"}, {"module", "m.attn"}, {"event", "m.attn#1/softmax#0/forward"},
       {"site", {{"module", "m.attn"}, {"call", 1}, {"op", "softmax#0"}}}},
      {{"name", "m.attn/forward/output/0"}, {"module", "m.attn"}, {"event", "m.attn/forward"},
       {"site", {{"module", "m.attn"}, {"call", 0}, {"op", ""}}}},
      {{"name", "old/row/of/revision/1.7"}, {"module", "m.mlp"}},
  };
  TreeIndexBuilder b;
  for (const json& r : rows) b.add(r);
  const json ix = b.take({});
  const auto event = decode(ix["event"], 3, false), module = decode(ix["site_module"], 3, false);
  const auto call = decode(ix["site_call"], 3, false), op = decode(ix["site_op"], 3, false);
  EXPECT_EQ(str(ix, event[0]), "m.attn#1/softmax#0/forward");
  EXPECT_EQ(str(ix, event[1]), "m.attn/forward");
  EXPECT_EQ(event[2], -1);
  EXPECT_EQ((std::vector<std::string>{str(ix, module[0]), str(ix, module[1]), str(ix, module[2])}),
            (std::vector<std::string>{"m.attn", "m.attn", "m.mlp"}));
  EXPECT_EQ(call, (std::vector<long long>{1, 0, 0}));
  EXPECT_EQ(str(ix, op[0]), "softmax#0");
  EXPECT_EQ(str(ix, op[1]), "");
  EXPECT_EQ(op[2], -1);
}

TEST(TreeIndex, LongRunsAreWrittenAsRunsAndOrdersAsDeltas) {
  TreeIndexBuilder b;
  for (int i = 0; i < 1000; ++i)
    b.add({{"name", "m" + std::to_string(i / 100) + "/forward/output/0"}, {"verdict", i == 500 ? "fail" : "pass"}, {"order", i},
           {"target_order", i + 7}, {"rank", 1}, {"step", i < 600 ? 0 : 1}});
  const json ix = b.take({});
  EXPECT_EQ(ix["rank"], json({{"runs", {1, 1000}}}));
  EXPECT_EQ(ix["step"], json({{"runs", {0, 600, 1, 400}}}));
  EXPECT_EQ(ix["order"], json({{"runs", {0, 1, 1, 999}}}));
  EXPECT_EQ(ix["target_order"], json({{"runs", {7, 1, 1, 999}}}));
  EXPECT_EQ(ix["verdict"], json({{"runs", {0, 500, 2, 1, 0, 499}}}));
  EXPECT_EQ(ix["head"]["runs"].size(), 20u);  // ten modules, one run each
  EXPECT_EQ(ix["strings"].size(), 11u);       // their names and the one tail
  EXPECT_EQ(decode(ix["target_order"], 1000, true)[999], 1006);
}

// A trimmed comparison carries the index of every row, kept or not; an untrimmed one does not need it.
TEST(TreeIndex, TrimmingAttachesTheIndexOfEveryRow) {
  json r = {{"schema", "parity.compare/1"}, {"rows", json::array()}};
  for (int i = 0; i < 50; ++i)
    r["rows"].push_back({{"name", "layers." + std::to_string(i) + "/forward/output/0"}, {"verdict", i == 40 ? "fail" : "pass"}, {"noise_ratio", i}});
  const json out = parity::report_rows::trim_compare_rows(r, 3);
  ASSERT_EQ(out["rows"].size(), 3u);
  EXPECT_EQ(out["report_tree"]["rows"], 50);
  EXPECT_EQ(out["report_tree"]["kept"], json({40, 48, 49}));
  EXPECT_EQ(out["report_tree"]["verdict"], json({{"runs", {0, 40, 2, 1, 0, 9}}}));
}
