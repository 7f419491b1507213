// NaN/Inf origin per rank and step, near-overflow warnings and gradient underflow statistics.
#include <gtest/gtest.h>

#include <deque>

#include "analysis/synth.h"
#include "parity/analysis.h"

namespace parity {
namespace {

MeasuredRecord rec(const std::string& name, const std::string& module, const std::string& op,
                   const std::string& direction, const std::string& role, int64_t order, DType dt,
                   double absmax, int64_t nan = 0, int64_t inf = 0, int64_t zeros = 0, int64_t numel = 100,
                   int64_t step = 0, int rank = 0) {
  static std::deque<Record> records;  // MeasuredRecord points at its record and its statistics: these outlive every test
  Record& r = records.emplace_back();
  r.name = name;
  r.module = module;
  r.op = op;
  r.direction = direction;
  r.role = role;
  r.order = order;
  r.dtype = dt;
  r.step = step;
  r.rank = rank;
  TensorStats s;  // what matters here: the range and the non-finite / zero counts
  s.min = -absmax, s.max = s.absmax = absmax, s.numel = numel;
  s.nan_count = nan, s.inf_count = inf, s.zero_count = zeros;
  r.stats = s;
  return MeasuredRecord{&r, &*r.stats};
}

TEST(Overflow, OriginIsTheFirstEventWithFiniteInputsAndNonFiniteOutputs) {
  std::vector<MeasuredRecord> v;
  v.push_back(rec("l0.attn/matmul#0/forward/input/0", "l0.attn", "matmul", "forward", "input", 0, DType::kF16, 3));
  v.push_back(rec("l0.attn/matmul#0/forward/output/0", "l0.attn", "matmul", "forward", "output", 1, DType::kF16, 11.3));
  v.push_back(rec("l0.attn/exp#0/forward/input/0", "l0.attn", "exp", "forward", "input", 2, DType::kF16, 11.3));
  v.push_back(rec("l0.attn/exp#0/forward/output/0", "l0.attn", "exp", "forward", "output", 3, DType::kF16, 6e4, 0, 7));
  v.push_back(rec("l0.attn/div#0/forward/input/0", "l0.attn", "div", "forward", "input", 4, DType::kF16, 6e4, 0, 7));
  v.push_back(rec("l0.attn/div#0/forward/output/0", "l0.attn", "div", "forward", "output", 5, DType::kF16, 1, 9, 0));
  v.push_back(rec("l0.mlp/forward/output/0", "l0.mlp", "MLP", "forward", "output", 6, DType::kF16, 1, 20));
  // Another step: clean.
  v.push_back(rec("l0.mlp/forward/output/0", "l0.mlp", "MLP", "forward", "output", 0, DType::kF16, 1, 0, 0, 0, 100, 1));
  OverflowReport r = analyse_overflow(v);
  ASSERT_EQ(r.origins.size(), 1u);
  const NanOrigin& o = r.origins[0];
  EXPECT_EQ(o.event, "l0.attn/exp#0/forward");
  EXPECT_EQ(o.op, "exp");
  EXPECT_EQ(o.step, 0);
  EXPECT_EQ(o.contaminated, 2);
  ASSERT_EQ(o.inputs.size(), 1u);
  EXPECT_DOUBLE_EQ(o.inputs[0].max, 11.3);
  EXPECT_NE(o.explanation.find("exp overflows in f16"), std::string::npos) << o.explanation;
  EXPECT_NE(o.explanation.find("11.09"), std::string::npos) << o.explanation;
  // 6e4 > 0.5 × 65504 in f16: near overflow (twice: the exp output and the div input).
  EXPECT_EQ(r.near_overflow.size(), 2u);
  EXPECT_EQ(r.nonfinite_records, 4);
  EXPECT_FALSE(r.grads_overflow);
  EXPECT_EQ(r.loss_scale_advice, "");
}

TEST(Overflow, GradientsDriveTheLossScaleAdvice) {
  std::vector<MeasuredRecord> under;
  under.push_back(rec("l0/backward/grad/weight", "l0", "Linear", "backward", "grad", 0, DType::kF16, 1e-5, 0, 0, 80));
  under.push_back(rec("l1/backward/grad/weight", "l1", "Linear", "backward", "grad", 1, DType::kF16, 1e-3, 0, 0, 5));
  OverflowReport u = analyse_overflow(under);
  EXPECT_TRUE(u.grads_underflow);
  EXPECT_FALSE(u.grads_overflow);
  EXPECT_EQ(u.loss_scale_advice, "raise");
  ASSERT_EQ(u.grad_underflow.size(), 2u);  // both fp16 gradients get their statistics
  EXPECT_DOUBLE_EQ(u.grad_underflow[0].zero_fraction, 0.8);
  // ... and only the first underflows (issue 31 §4: the report titled all of them "underflowing").
  EXPECT_TRUE(u.grad_underflow[0].underflowing);
  EXPECT_FALSE(u.grad_underflow[1].underflowing);

  std::vector<MeasuredRecord> over = under;
  over.push_back(rec("l2/backward/grad/weight", "l2", "Linear", "backward", "grad", 2, DType::kF32, 1, 0, 3));
  OverflowReport o = analyse_overflow(over);
  EXPECT_TRUE(o.grads_overflow);
  EXPECT_EQ(o.loss_scale_advice, "lower");  // overflow wins: lower first, then re-check underflow
  ASSERT_EQ(o.origins.size(), 1u);
  EXPECT_TRUE(o.origins[0].role_is_grad);
}

TEST(Overflow, MeasuredFromCompareRows) {
  test::Synth s;
  s.row("a", "Linear", "forward", "output", 0, 0, DType::kF32, DType::kF32, 0, 0, /*nan_t=*/5);
  const MeasuredSide target = measured_records(s.result, true);  // the records point into it
  const MeasuredSide golden = measured_records(s.result, false);
  const std::vector<MeasuredRecord>& t = target.records;
  const std::vector<MeasuredRecord>& g = golden.records;
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].stats->nan_count, 5);
  EXPECT_EQ(g[0].stats->nan_count, 0);
  EXPECT_EQ(analyse_overflow(t).origins.size(), 1u);
  EXPECT_EQ(analyse_overflow(g).origins.size(), 0u);
}

TEST(ConfigDiff, OptimizerHyperparametersAreNumericSettings) {
  auto d = config_diff(std::string(R"({"optimizer": {"0": {"class": "AdamW", "param_groups": {"0": {"eps": 1e-08}}}}})"),
                       std::string(R"({"optimizer": {"0": {"class": "AdamW", "param_groups": {"0": {"eps": 1e-06}}}}})"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key, "optimizer.0.param_groups.0.eps");
  EXPECT_EQ(d[0].category, "optimizer");
  EXPECT_TRUE(d[0].numeric);
}

TEST(ConfigDiff, CategoriesAndIgnoredIdentities) {
  auto d = config_diff(std::string(R"({"torch": {"version": "2.1"}, "precision": {"dtype": "float32"},
                                       "hostname": "a", "tokenizer": {"bos": 1}, "note": "x"})"),
                       std::string(R"({"torch": {"version": "2.2"}, "precision": {"dtype": "bfloat16"},
                                       "hostname": "b", "tokenizer": {"bos": 2}, "note": "y"})"));
  ASSERT_EQ(d.size(), 4u);
  std::map<std::string, std::string> cat;
  for (const auto& x : d) cat[x.key] = x.category;
  EXPECT_EQ(cat["torch.version"], "version");
  EXPECT_EQ(cat["precision.dtype"], "precision");
  EXPECT_EQ(cat["tokenizer.bos"], "model");
  EXPECT_EQ(cat["note"], "other");
  EXPECT_EQ(cat.count("hostname"), 0u);
  EXPECT_FALSE(d.back().numeric);  // non-numeric differences sort last
  EXPECT_TRUE(config_diff(std::nullopt, std::string("{}")).empty());
  auto bad = config_diff(std::string("{"), std::string("{}"));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].golden, "unparsable JSON");
}

// Records of several ranks and steps, listed interleaved, one event name in every stream: each (rank,
// step) stream is searched on its own, and the origins come in (rank, step) order.
TEST(Overflow, EachRankAndStepHasItsOwnOrigin) {
  std::vector<MeasuredRecord> v;
  for (int64_t step : {1, 0})
    for (int rank : {1, 0}) {
      const bool nan_here = (rank == 0 && step == 1) || (rank == 1 && step == 0);
      v.push_back(rec("l0/exp#0/forward/input/0", "l0", "exp", "forward", "input", 0, DType::kF16, 3, 0, 0, 0, 100, step, rank));
      v.push_back(rec("l0/exp#0/forward/output/0", "l0", "exp", "forward", "output", 1, DType::kF16, 20, nan_here ? 5 : 0,
                      0, 0, 100, step, rank));
      v.push_back(rec("l0/div#0/forward/input/0", "l0", "div", "forward", "input", 2, DType::kF16, 20, nan_here ? 5 : 0,
                      0, 0, 100, step, rank));
      v.push_back(rec("l0/div#0/forward/output/0", "l0", "div", "forward", "output", 3, DType::kF16, 1, rank == 1 ? 3 : 0,
                      0, 0, 100, step, rank));
    }
  OverflowReport r = analyse_overflow(v);
  ASSERT_EQ(r.origins.size(), 3u);
  EXPECT_EQ(r.origins[0].rank, 0);  // rank 0 step 1: born at exp
  EXPECT_EQ(r.origins[0].step, 1);
  EXPECT_EQ(r.origins[0].event, "l0/exp#0/forward");
  EXPECT_EQ(r.origins[0].contaminated, 0);  // the div carries it on, its output stays finite
  EXPECT_EQ(r.origins[1].rank, 1);  // rank 1 step 0: born at exp, carried through div
  EXPECT_EQ(r.origins[1].step, 0);
  EXPECT_EQ(r.origins[1].event, "l0/exp#0/forward");
  EXPECT_EQ(r.origins[1].contaminated, 1);
  EXPECT_EQ(r.origins[2].rank, 1);  // rank 1 step 1: finite inputs, NaN from the div itself
  EXPECT_EQ(r.origins[2].step, 1);
  EXPECT_EQ(r.origins[2].event, "l0/div#0/forward");
  EXPECT_EQ(r.nonfinite_records, 2 * 2 + 2);  // exp output and div input of two streams, rank 1's div outputs
}

}  // namespace
}  // namespace parity

namespace parity {
namespace {

TEST(Overflow, TheOpInsideAModuleIsTheOriginNotTheModuleAroundIt) {
  // The module's input is recorded first (order 0), the op inside it next, the module's output last.
  std::vector<MeasuredRecord> v;
  v.push_back(rec("attn/forward/input/0", "attn", "Attention", "forward", "input", 0, DType::kF32, 1));
  v.push_back(rec("attn/exp#0/forward/input/0", "attn", "exp", "forward", "input", 1, DType::kF32, 95));
  v.push_back(rec("attn/exp#0/forward/output/0", "attn", "exp", "forward", "output", 2, DType::kF32, 1, 0, 3));
  v.push_back(rec("attn/forward/output/0", "attn", "Attention", "forward", "output", 3, DType::kF32, 1, 9));
  OverflowReport r = analyse_overflow(v);
  ASSERT_EQ(r.origins.size(), 1u);
  EXPECT_EQ(r.origins[0].event, "attn/exp#0/forward");
  EXPECT_EQ(r.origins[0].contaminated, 1);
  EXPECT_NE(r.origins[0].explanation.find("exp overflows in f32"), std::string::npos) << r.origins[0].explanation;
}

TEST(Overflow, AttentionMasksAreNotOrigins) {
  // masked_fill writes 6 × -Inf on purpose; softmax receives them and stays finite; a later op makes NaN.
  std::vector<MeasuredRecord> v;
  v.push_back(rec("a/masked_fill#0/forward/input/0", "a", "masked_fill", "forward", "input", 0, DType::kF32, 2));
  v.push_back(rec("a/masked_fill#0/forward/output/0", "a", "masked_fill", "forward", "output", 1, DType::kF32, 2, 0, 6));
  v.push_back(rec("a/to#0/forward/input/0", "a", "to", "forward", "input", 2, DType::kF32, 2, 0, 6));
  v.push_back(rec("a/to#0/forward/output/0", "a", "to", "forward", "output", 3, DType::kF32, 2, 0, 6));
  v.push_back(rec("a/softmax#0/forward/input/0", "a", "softmax", "forward", "input", 4, DType::kF32, 2, 0, 6));
  v.push_back(rec("a/softmax#0/forward/output/0", "a", "softmax", "forward", "output", 5, DType::kF32, 1));
  v.push_back(rec("a/log#0/forward/input/0", "a", "log", "forward", "input", 6, DType::kF32, 1));
  v.push_back(rec("a/log#0/forward/output/0", "a", "log", "forward", "output", 7, DType::kF32, 1, 4));
  OverflowReport r = analyse_overflow(v);
  ASSERT_EQ(r.origins.size(), 1u);
  EXPECT_EQ(r.origins[0].event, "a/log#0/forward");
  // Token ids are never blamed for an overflow.
  std::vector<MeasuredRecord> ids;
  ids.push_back(rec("<root>/forward/input/0", "<root>", "Llama", "forward", "input", 0, DType::kI64, 60000));
  ids.push_back(rec("<root>/forward/output/0", "<root>", "Llama", "forward", "output", 1, DType::kF32, 1, 5));
  OverflowReport ri = analyse_overflow(ids);
  ASSERT_EQ(ri.origins.size(), 1u);
  EXPECT_EQ(ri.origins[0].explanation.find("i64"), std::string::npos) << ri.origins[0].explanation;
}

TEST(Overflow, EmbeddingAndFp32GradientsAreNotUnderflowAlone) {
  std::vector<MeasuredRecord> v;
  v.push_back(rec("embed/backward/grad/weight", "embed", "Embedding", "backward", "grad", 0, DType::kBF16, 1, 0, 0, 90));
  v.push_back(rec("l0/backward/grad/weight", "l0", "Linear", "backward", "grad", 1, DType::kF32, 1, 0, 0, 90));
  OverflowReport r = analyse_overflow(v);
  EXPECT_FALSE(r.grads_underflow);
  EXPECT_EQ(r.loss_scale_advice, "");
  EXPECT_EQ(r.grad_underflow.size(), 1u);  // the bf16 one still reports its statistics
  EXPECT_FALSE(r.grad_underflow[0].underflowing);  // an embedding table is sparse by design
}

}  // namespace
}  // namespace parity
