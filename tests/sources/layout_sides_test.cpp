// tests/sources/layout_sides_test.cpp — the layout a capture recorded (parity/layout.h `recorded_layout`,
// `combine_sides`, docs/layout.md "Recorded by the capture"): sizes and coordinates from each rank's
// fingerprint, the rank order found from the coordinates, parameters' splits (Megatron's attributes,
// DTensor placements) placing their records without a rule, and a file that disagrees with the capture.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <string>

#include "../core/memory_source.h"
#include "parity/layout.h"

namespace parity::layout {
namespace {

// A rank's fingerprint whose "parallel" object is `parallel` (the rest of a fingerprint does not matter).
std::string fingerprint(const std::string& parallel) { return R"({"python": "3", "parallel": )" + parallel + "}"; }

// Megatron's parallel_state at tp 2, pp 2, dp 2 in the order tp-pp-dp (no order recorded: parallel_state has
// no getter for it): rank r is at tp r % 2, pp (r / 2) % 2, dp r / 4.
std::map<int, std::string> megatron_ranks() {
  std::map<int, std::string> out;
  for (int r = 0; r < 8; ++r)
    out[r] = fingerprint(fmt::format(R"({{"source": "megatron", "tp": 2, "pp": 2, "dp": 2, "rank": {}, "world": 8,
      "coords": {{"tp": {}, "pp": {}, "dp": {}}}, "num_layers": 4,
      "params": {{"layers.0.up.weight": {{"tensor_model_parallel": true, "partition_dim": 0, "partition_stride": 1}},
                  "layers.0.norm.weight": {{"sequence_parallel": true}}}}}})",
                                     r, r % 2, (r / 2) % 2, r / 4));
  return out;
}

TEST(RecordedLayout, SizesCoordinatesAndTheOrderTheyImply) {
  Result<std::optional<SideLayout>> got = recorded_layout(megatron_ranks(), "runs/tp2pp2");
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(got->has_value());
  const SideLayout& s = **got;
  EXPECT_EQ(std::tie(s.tp, s.pp, s.dp, s.num_layers), std::make_tuple(2, 2, 2, 4));
  EXPECT_EQ(s.order, (std::vector<std::string>{"tp", "pp", "dp"}));  // the default tp-dp-pp puts rank 2 at dp 1
  EXPECT_TRUE(s.states("tp") && s.states("num_layers") && !s.states("order"));
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params.at("layers.0.up.weight").partition_dim, 0);
  EXPECT_TRUE(s.params.at("layers.0.norm.weight").sequence_parallel);
}

TEST(RecordedLayout, RanksThatDisagreeOrFitNoOrderAreErrors) {
  std::map<int, std::string> ranks = megatron_ranks();
  ranks[3] = fingerprint(R"({"source": "megatron", "tp": 4, "pp": 2, "dp": 1, "coords": {"tp": 3, "pp": 0, "dp": 0}})");
  Result<std::optional<SideLayout>> got = recorded_layout(ranks, "runs/x");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("runs/x: rank 3 records tp 4, rank 0 tp 2"), std::string::npos) << got.status().message();
  ranks = megatron_ranks();
  ranks[1] = fingerprint(R"({"source": "megatron", "tp": 2, "pp": 2, "dp": 2, "coords": {"tp": 0, "pp": 1, "dp": 1}})");
  got = recorded_layout(ranks, "runs/x");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("fit no rank order"), std::string::npos) << got.status().message();
  // An order the capture gave is checked, not searched.
  got = recorded_layout({{1, fingerprint(R"({"source": "argument", "tp": 2, "order": "tp-dp-pp", "coords": {"tp": 0, "pp": 0, "dp": 0}})")}},
                        "runs/y");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("rank 1 records tp 0, pp 0, dp 0; the order tp-dp-pp puts it at tp 1"), std::string::npos)
      << got.status().message();
  got = recorded_layout({{0, fingerprint(R"({"source": "megatron", "tp": 2, "cp": 2})")}}, "runs/z");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("context parallel 2"), std::string::npos);
}

TEST(RecordedLayout, OlderCapturesAndTorchDistributedStateNothing) {
  Result<std::optional<SideLayout>> none = recorded_layout({{0, R"({"python": "3"})"}}, "old");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  // torch.distributed alone guesses every rank a DP replica: nothing a layout file must agree with.
  Result<std::optional<SideLayout>> dist = recorded_layout(
      {{0, fingerprint(R"({"source": "torch.distributed", "tp": 1, "pp": 1, "dp": 2, "coords": {"tp": 0, "pp": 0, "dp": 0}})")}}, "r");
  ASSERT_TRUE(dist.ok() && dist->has_value());
  EXPECT_TRUE((*dist)->stated.empty());
  SideLayout file;
  file.tp = 2;
  file.stated = {"tp"};
  Result<SideLayout> combined = combine_sides(file, *dist, "f.json", "target", "r");
  ASSERT_TRUE(combined.ok());
  EXPECT_EQ(std::tie(combined->tp, combined->dp), std::make_tuple(2, 1));
}

TEST(RecordedLayout, DTensorShardOnTheTpMeshDimension) {
  Result<std::optional<SideLayout>> got = recorded_layout(
      {{0, fingerprint(R"j({"source": "argument", "tp": 2, "pp": 1, "dp": 2, "order": "tp-dp-pp",
          "coords": {"tp": 0, "pp": 0, "dp": 0}, "params": {
          "w": {"dtensor": {"placements": ["Shard(0)", "Shard(1)"], "mesh_shape": [2, 2], "mesh_dim_names": ["dp", "tp"]}},
          "b": {"dtensor": {"placements": ["Replicate()", "Replicate()"], "mesh_shape": [2, 2], "mesh_dim_names": ["dp", "tp"]}}}})j")}},
      "r");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().message();
  ASSERT_EQ((*got)->params.size(), 1u);  // the replicated bias says nothing
  EXPECT_EQ((*got)->params.at("w").partition_dim, 1);  // Shard(0) is over the DP mesh dimension
}

TEST(CombineSides, AFileThatDisagreesWithTheCaptureNamesBoth) {
  Result<std::optional<SideLayout>> rec = recorded_layout(megatron_ranks(), "runs/tp2pp2");
  ASSERT_TRUE(rec.ok());
  SideLayout file;
  file.tp = 4;
  file.stated = {"tp"};
  Result<SideLayout> bad = combine_sides(file, *rec, "t.layout.json", "target", "runs/tp2pp2");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "t.layout.json: target.tp is 4, but the target's capture (runs/tp2pp2) recorded tp 2");
  // A file stating only the layers completes what the capture recorded.
  SideLayout layers;
  layers.stage_layers = {1, 3};
  layers.stated = {"stage_layers"};
  Result<SideLayout> ok = combine_sides(layers, *rec, "t.layout.json", "target", "runs/tp2pp2");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(std::tie(ok->tp, ok->pp, ok->dp), std::make_tuple(2, 2, 2));
  EXPECT_EQ(layer_offset(*ok, 1), 1);
  EXPECT_EQ(ok->params.size(), 2u);
  // PP without the layers of each stage, from neither: an error saying where to give them.
  std::map<int, std::string> no_layers = {{0, fingerprint(R"({"source": "argument", "tp": 1, "pp": 2, "dp": 1,
                                                                "coords": {"tp": 0, "pp": 0, "dp": 0}})")}};
  Result<SideLayout> missing = combine_sides(SideLayout{}, *recorded_layout(no_layers, "runs/pp2"), "", "golden", "runs/pp2");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("records PP 2, and 2 PP stages need"), std::string::npos) << missing.status().message();
}

Record param_record(const char* name, const char* module, const char* dir, const char* role, Shape shape) {
  Record r;
  r.name = name, r.module = module, r.direction = dir, r.role = role, r.shape = shape, r.rank = 0, r.step = 0;
  return r;
}

TEST(ShardPlan, ARecordedSplitPlacesParametersWithoutARule) {
  const ParamSplit row{1, 1, false}, strided{0, 2, false}, seq{-1, 1, true};
  const Record w = param_record("l.o/forward/parameter/weight", "l.o", "forward", "parameter", {8, 4});
  const Record g = param_record("l.o/backward/grad/weight#1", "l.o", "backward", "grad", {8, 4});
  const Record m = param_record("l.o/optimizer/exp_avg/weight", "l.o", "optimizer", "exp_avg", {8, 4});
  const Record out = param_record("l.o/forward/output/0", "l.o", "forward", "output", {2, 8});
  EXPECT_EQ(parameter_path(g), "l.o.weight");
  EXPECT_EQ(parameter_path(param_record("<root>/forward/parameter/bias", "<root>", "forward", "parameter", {4})), "bias");
  EXPECT_EQ(parameter_path(out), "");
  for (const Record* r : {&w, &g, &m}) {
    const ShardPlan p = shard_plan(*r, nullptr, &row);
    EXPECT_EQ(std::tie(p.combine, p.dim), std::make_tuple(Combine::kConcat, 1)) << r->name.str();
  }
  EXPECT_EQ(shard_plan(out, nullptr, &row).combine, Combine::kReplicated);  // activations need a rule
  EXPECT_EQ(shard_plan(w, nullptr, &strided).combine, Combine::kUnsupported);
  EXPECT_NE(unsupported_reason(w, nullptr, &strided).find("partition_stride 2"), std::string::npos);
  EXPECT_EQ(shard_plan(g, nullptr, &seq).combine, Combine::kSum);  // a sequence-parallel weight's gradient
  EXPECT_EQ(shard_plan(w, nullptr, &seq).combine, Combine::kReplicated);
  // A rule that agrees is no conflict; one that places the weight otherwise names both.
  SplitRule row_rule, column_rule;
  row_rule.split = Split::kRow;
  column_rule.split = Split::kColumn, column_rule.line = 3;
  EXPECT_EQ(plan_conflict(w, &row_rule, row, "f.json"), "");
  EXPECT_EQ(plan_conflict(w, &column_rule, row, "f.json"),
            "f.json: splits[3] (column) makes its TP shards concatenated along dimension 0, but the capture recorded "
            "partition_dim 1 for l.o.weight (they would be concatenated along dimension 1)");
}

TEST(MergeShards, RecordedSplitsMergeParametersWithoutAFile) {
  auto src = std::make_unique<test::MemorySource>();
  int order = 0;
  for (int rank : {0, 1}) {
    Record& r = src->add("l.o/backward/grad/weight", std::vector<float>{1.0f + rank, 2.0f + rank}, Shape({1, 2}));
    r.module = "l.o", r.direction = "backward", r.role = "grad", r.rank = rank, r.step = 0, r.order = order++;
  }
  Layout layout;
  layout.file = "the layouts the captures recorded";
  SideLayout side;
  side.tp = 2;
  side.params["l.o.weight"] = ParamSplit{1, 1, false};
  auto merged = merge_shards(std::move(src), layout, side);
  ASSERT_EQ(merged->records().size(), 1u);
  EXPECT_EQ(merged->records()[0].shape, Shape({1, 4}));
  Result<TensorView> v = merged->load(merged->records()[0]);
  ASSERT_TRUE(v.ok());
  std::vector<float> got(4);
  decode_to_float(*v, 0, 4, got.data());
  EXPECT_EQ(got, (std::vector<float>{1, 2, 2, 3}));
  EXPECT_TRUE(merged->problems().empty());
}

}  // namespace
}  // namespace parity::layout
