// tests/sources/layout_test.cpp — runs laid out over parallel ranks (parity/layout.h, docs/layout.md): the
// layout file's errors, rank coordinates, layer offsets of PP stages, the table of how shards combine, and
// the merging source (concatenation, partial sums, replicas that must agree, shards that do not fit).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "../core/memory_source.h"
#include "../temp_dir.h"
#include "parity/layout.h"

namespace parity::layout {
namespace {

Layout layout_of(const std::string& text, const parity_test::TempDir& dir) {
  const auto path = dir.path() / "layout.json";
  std::ofstream(path) << text;
  Result<Layout> l = read_layout(path);
  EXPECT_TRUE(l.ok()) << l.status().message();
  return l.ok() ? *l : Layout{};
}

std::string error_of(const std::string& text, const parity_test::TempDir& dir) {
  const auto path = dir.path() / "layout.json";
  std::ofstream(path) << text;
  Result<Layout> l = read_layout(path);
  return l.ok() ? "" : l.status().message();
}

constexpr const char* kTp2 = R"({"schema": "parity.layout/1",
  "splits": [{"modules": "\\.(q|up)$", "split": "column"}, {"modules": "\\.(o|down)$", "split": "row"},
             {"modules": "^embed$", "split": "vocab"}, {"modules": "\\.o_partial$", "split": "row", "partial": true}],
  "target": {"tp": 2}})";

TEST(LayoutFile, ErrorsNameTheFileAndTheKey) {
  parity_test::TempDir dir;
  EXPECT_NE(error_of(R"({"schema": "parity.layout/9"})", dir).find("\"schema\" must be \"parity.layout/1\""), std::string::npos);
  EXPECT_NE(error_of(R"({"schema": "parity.layout/1", "splits": [{"modules": "x", "split": "diagonal"}]})", dir)
                .find("splits[0]: split \"diagonal\" is not one of"), std::string::npos);
  EXPECT_NE(error_of(R"({"schema": "parity.layout/1", "splits": [{"modules": "(", "split": "row"}]})", dir)
                .find("splits[0]:"), std::string::npos);
  EXPECT_NE(error_of(R"({"schema": "parity.layout/1", "target": {"tp": 0}})", dir).find("target: \"tp\" must be"), std::string::npos);
  EXPECT_NE(error_of(R"({"schema": "parity.layout/1", "target": {"pp": 2}})", dir).find("\"stage_layers\" or a \"num_layers\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"schema": "parity.layout/1", "target": {"order": "tp-pp"}})", dir).find("\"order\""), std::string::npos);
  EXPECT_NE(error_of("[1, 2]", dir).find("layout.json: not a JSON object"), std::string::npos);
}

TEST(LayoutFile, RankCoordinatesFollowTheOrder) {
  SideLayout side;
  side.tp = 2, side.dp = 2, side.pp = 2;
  side.num_layers = 4;
  const RankCoords c5 = *coords_of(5, side);  // tp fastest: 5 = tp 1, dp 0, pp 1
  EXPECT_EQ(std::tie(c5.tp, c5.dp, c5.pp), std::make_tuple(1, 0, 1));
  side.order = {"pp", "tp", "dp"};
  const RankCoords c5b = *coords_of(5, side);  // 5 = pp 1, tp 0, dp 1
  EXPECT_EQ(std::tie(c5b.tp, c5b.dp, c5b.pp), std::make_tuple(0, 1, 1));
  EXPECT_FALSE(coords_of(8, side).ok());
}

TEST(LayoutFile, PipelineStagesMakeLayerNumbersGlobal) {
  SideLayout side;
  side.pp = 2;
  side.stage_layers = {3, 5};
  EXPECT_EQ(layer_offset(side, 1), 3);
  EXPECT_EQ(global_layer_path("model.layers.2.mlp/forward/output/0", "layers", 3), "model.layers.5.mlp/forward/output/0");
  EXPECT_EQ(global_layer_path("layers.1#1/forward/output/0", "layers", 3), "layers.4#1/forward/output/0");
  EXPECT_EQ(global_layer_path("my_layers.1.x", "layers", 3), "my_layers.1.x");  // not the list named
  EXPECT_EQ(global_layer_path("model.norm", "layers", 3), "model.norm");
}

Record rec(const char* name, const char* module, const char* direction, const char* role, Shape shape) {
  Record r;
  r.name = name, r.module = module, r.direction = direction, r.role = role, r.shape = shape, r.rank = 0, r.step = 0;
  return r;
}

TEST(ShardPlan, MegatronsTable) {
  parity_test::TempDir dir;
  const Layout l = layout_of(kTp2, dir);
  auto plan = [&](const Record& r) {
    const ShardPlan p = shard_plan(r, l.rule_for(r.module));
    return std::string(p.combine == Combine::kConcat ? "concat" : p.combine == Combine::kSum ? "sum"
                       : p.combine == Combine::kReplicated ? "replicated" : "unsupported") +
           (p.combine == Combine::kConcat ? std::to_string(p.dim) : "");
  };
  EXPECT_EQ(plan(rec("l.q/forward/input/0", "l.q", "forward", "input", {2, 8})), "replicated");
  EXPECT_EQ(plan(rec("l.q/forward/output/0", "l.q", "forward", "output", {2, 3, 8})), "concat2");
  EXPECT_EQ(plan(rec("l.q/backward/input/0", "l.q", "backward", "input", {2, 8})), "concat1");
  EXPECT_EQ(plan(rec("l.q/backward/output/0", "l.q", "backward", "output", {2, 8})), "replicated");
  EXPECT_EQ(plan(rec("l.q/forward/parameter/weight", "l.q", "forward", "parameter", {8, 4})), "concat0");
  EXPECT_EQ(plan(rec("l.o/forward/input/0", "l.o", "forward", "input", {2, 8})), "concat1");
  EXPECT_EQ(plan(rec("l.o/forward/output/0", "l.o", "forward", "output", {2, 8})), "replicated");
  EXPECT_EQ(plan(rec("l.o/backward/output/0", "l.o", "backward", "output", {2, 8})), "concat1");
  EXPECT_EQ(plan(rec("l.o/backward/grad/weight", "l.o", "backward", "grad", {8, 4})), "concat1");
  EXPECT_EQ(plan(rec("l.o/forward/parameter/bias", "l.o", "forward", "parameter", {8})), "replicated");
  EXPECT_EQ(plan(rec("l.o/optimizer/exp_avg/weight", "l.o", "optimizer", "exp_avg", {8, 4})), "concat1");
  EXPECT_EQ(plan(rec("l.o_partial/forward/output/0", "l.o_partial", "forward", "output", {2, 8})), "sum");
  EXPECT_EQ(plan(rec("embed/forward/parameter/weight", "embed", "forward", "parameter", {64, 8})), "concat0");
  EXPECT_EQ(plan(rec("embed/forward/output/0", "embed", "forward", "output", {2, 8})), "replicated");
  EXPECT_EQ(plan(rec("l.norm/forward/output/0", "l.norm", "forward", "output", {2, 8})), "replicated");
  // An op inside a split module: the module's rule does not say how its inputs and outputs are split.
  EXPECT_EQ(plan(rec("l.q/linear#0/forward/output/0", "l.q", "forward", "output", {2, 8})), "unsupported");
}

// Two TP ranks of one layer: rank r's records as Megatron's would hold them.
struct Tp2Run {
  std::unique_ptr<test::MemorySource> src = std::make_unique<test::MemorySource>();
  Record& add(const std::string& name, const char* module, const char* dir, const char* role, int rank,
              const std::vector<float>& v, Shape shape) {
    Record& r = src->add(name, v, shape);
    r.module = module, r.direction = dir, r.role = role, r.rank = rank, r.step = 0, r.order = static_cast<int64_t>(src->records().size());
    return r;
  }
};

std::vector<float> values(const TensorView& v) {
  std::vector<float> out(static_cast<size_t>(v.numel));
  decode_to_float(v, 0, v.numel, out.data());
  return out;
}

TEST(MergeShards, ConcatenatesSumsAndChecksReplicas) {
  parity_test::TempDir dir;
  const Layout l = layout_of(kTp2, dir);
  auto run = std::make_unique<Tp2Run>();
  // A [2, 2] column-parallel weight on each rank is rows 0-1 and 2-3 of [4, 2]; outputs [2, 2] per rank.
  run->add("l.q/forward/parameter/weight", "l.q", "forward", "parameter", 0, {1, 2, 3, 4}, {2, 2});
  run->add("l.q/forward/parameter/weight", "l.q", "forward", "parameter", 1, {5, 6, 7, 8}, {2, 2});
  run->add("l.q/forward/output/0", "l.q", "forward", "output", 0, {1, 2, 3, 4}, {2, 2});
  run->add("l.q/forward/output/0", "l.q", "forward", "output", 1, {5, 6, 7, 8}, {2, 2});
  run->add("l.o_partial/forward/output/0", "l.o_partial", "forward", "output", 0, {1, 2}, {2});
  run->add("l.o_partial/forward/output/0", "l.o_partial", "forward", "output", 1, {10, 20}, {2});
  run->add("l.norm/forward/output/0", "l.norm", "forward", "output", 0, {1, 2}, {2});
  run->add("l.norm/forward/output/0", "l.norm", "forward", "output", 1, {1, 2.5}, {2});
  auto src = merge_shards(std::move(run->src), l, l.target);
  ASSERT_EQ(src->records().size(), 4u);
  std::map<std::string, const Record*> by;
  for (const Record& r : src->records()) by[r.name.str()] = &r;
  EXPECT_EQ(by["l.q/forward/parameter/weight"]->shape, Shape({4, 2}));
  EXPECT_EQ(values(*src->load(*by["l.q/forward/parameter/weight"])), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(by["l.q/forward/output/0"]->shape, Shape({2, 4}));  // the last dimension: each row's halves
  EXPECT_EQ(values(*src->load(*by["l.q/forward/output/0"])), (std::vector<float>{1, 2, 5, 6, 3, 4, 7, 8}));
  EXPECT_EQ(values(*src->load(*by["l.o_partial/forward/output/0"])), (std::vector<float>{11, 22}));
  Result<TensorView> norm = src->load(*by["l.norm/forward/output/0"]);
  ASSERT_FALSE(norm.ok());
  EXPECT_NE(norm.status().message().find("RANK_INCONSISTENT"), std::string::npos);
  EXPECT_NE(norm.status().message().find("TP shard 1 differs"), std::string::npos);
  for (const Record& r : src->records()) EXPECT_EQ(r.rank, 0);  // the DP rank
  EXPECT_TRUE(src->problems().empty());
}

TEST(MergeShards, ShardsThatDoNotFitAreKeptWithAProblem) {
  parity_test::TempDir dir;
  const Layout l = layout_of(kTp2, dir);
  auto run = std::make_unique<Tp2Run>();
  run->add("l.q/forward/output/0", "l.q", "forward", "output", 0, {1, 2}, {1, 2});  // rank 1's shard missing
  run->add("l.o/forward/input/0", "l.o", "forward", "input", 0, {1, 2}, {1, 2});
  run->add("l.o/forward/input/0", "l.o", "forward", "input", 1, {1, 2, 3}, {3, 1});  // shapes do not concatenate
  auto src = merge_shards(std::move(run->src), l, l.target);
  ASSERT_EQ(src->problems().size(), 2u);
  EXPECT_NE(src->problems()[0].message().find("1 of 2 TP shards recorded"), std::string::npos);
  EXPECT_NE(src->problems()[1].message().find("do not concatenate"), std::string::npos);
  ASSERT_EQ(src->records().size(), 3u);  // every shard kept, under its own name and rank
  std::vector<int> ranks;
  for (const Record& r : src->records()) ranks.push_back(r.rank);
  EXPECT_EQ(ranks, (std::vector<int>{0, 0, 1}));
}

TEST(MergeShards, PipelineStagesBecomeOneRunInExecutionOrder) {
  parity_test::TempDir dir;
  const Layout l = layout_of(R"({"schema": "parity.layout/1", "target": {"pp": 2, "num_layers": 4}})", dir);
  auto run = std::make_unique<Tp2Run>();
  run->add("layers.0/forward/output/0", "layers.0", "forward", "output", 0, {1}, {1});
  run->add("layers.0/backward/input/0", "layers.0", "backward", "input", 0, {1}, {1});
  run->add("layers.0/forward/output/0", "layers.0", "forward", "output", 1, {2}, {1});
  run->add("layers.1/backward/input/0", "layers.1", "backward", "input", 1, {2}, {1});
  auto src = merge_shards(std::move(run->src), l, l.target);
  std::vector<std::string> order(src->records().size());
  for (const Record& r : src->records()) order[static_cast<size_t>(r.order)] = r.name.str() + "@" + r.module.str();
  EXPECT_EQ(order, (std::vector<std::string>{"layers.0/forward/output/0@layers.0", "layers.2/forward/output/0@layers.2",
                                             "layers.3/backward/input/0@layers.3", "layers.0/backward/input/0@layers.0"}));
}

// A stage's root holds what the stage received and sent: the model's input is the first stage's, its output
// the last stage's, and what stage 1 received must be what stage 0 sent (forward), what stage 0 received
// what stage 1 sent back (backward).
TEST(MergeShards, PipelineStageBoundariesAreCheckedAndTheEndsKept) {
  parity_test::TempDir dir;
  const Layout l = layout_of(R"({"schema": "parity.layout/1", "target": {"pp": 2, "num_layers": 2}})", dir);
  auto stages = [](float sent_back) {
    auto run = std::make_unique<Tp2Run>();
    run->add("<root>/forward/input/0", "<root>", "forward", "input", 0, {1, 2}, {2});     // the model's input
    run->add("layers.0/forward/output/0", "layers.0", "forward", "output", 0, {3, 4}, {2});
    run->add("<root>/forward/output/0", "<root>", "forward", "output", 0, {3, 4}, {2});   // sent to stage 1
    run->add("<root>/backward/input/0", "<root>", "backward", "input", 0, {5, 6}, {2});   // received from 1
    run->add("<root>/forward/input/0", "<root>", "forward", "input", 1, {3, 4}, {2});     // received from 0
    run->add("layers.0/forward/output/0", "layers.0", "forward", "output", 1, {7, 8}, {2});
    run->add("<root>/forward/output/0", "<root>", "forward", "output", 1, {7, 8}, {2});   // the model's output
    run->add("<root>/backward/output/0", "<root>", "backward", "output", 1, {5, sent_back}, {2});  // sent to 0
    return run;
  };
  auto healthy = merge_shards(std::move(stages(6)->src), l, l.target);
  EXPECT_TRUE(healthy->problems().empty()) << healthy->problems()[0].message();
  std::map<std::string, std::vector<float>> got;
  for (const Record& r : healthy->records()) got[r.name.str()] = values(*healthy->load(r));
  EXPECT_EQ(got, (std::map<std::string, std::vector<float>>{{"<root>/forward/input/0", {1, 2}},
                                                            {"layers.0/forward/output/0", {3, 4}},
                                                            {"layers.1/forward/output/0", {7, 8}},
                                                            {"<root>/forward/output/0", {7, 8}}}));
  auto broken = merge_shards(std::move(stages(9)->src), l, l.target);  // stage 1 sent back other values
  ASSERT_EQ(broken->problems().size(), 1u);
  EXPECT_NE(broken->problems()[0].message().find("PP stage boundary: <root>/backward/output/0 on stage 1"), std::string::npos)
      << broken->problems()[0].message();
}

}  // namespace
}  // namespace parity::layout
