// Tests of `run_compare` (pairing, modes, verdicts, parallel execution) and the judgement rules at
// their threshold edges (the thresholds file: tests/judgement; the JSON: tests/pipeline; the CSV and the
// table: tests/report). Sources are in-memory
// RecordSources holding real tensors; metrics come from the real fused kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "compare/judge.h"
#include "parity/compare.h"
#include "parity/compare_runs.h"
#include "parity/matching.h"
#include "parity/thresholds.h"
#include "parity/compare_report.h"
#include "core/memory_source.h"
#include "temp_dir.h"

namespace parity {
namespace {

using test::compare_options;
using test::MemorySource;
using test::ramp;
using test::stats;

const CompareRow* find_row(const CompareResult& r, const std::string& name) {
  for (const CompareRow& row : r.rows) {
    if (row.golden->name == name) return &row;
  }
  return nullptr;
}

TEST(ComparePairing, PairsByNameAndListsUnmatched) {
  MemorySource g, t;
  g.add("a", ramp(16));
  g.add("b", ramp(16));
  g.add("c", ramp(16));
  t.add("c", ramp(16));
  t.add("b", ramp(16));
  t.add("d", ramp(16));
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rows.size(), 2u);
  EXPECT_EQ(r->rows[0].golden->name, "b");  // golden order, whatever the target order
  EXPECT_EQ(r->rows[1].golden->name, "c");
  ASSERT_EQ(r->unmatched_golden.size(), 1u);
  EXPECT_EQ(r->unmatched_golden[0].name, "a");
  ASSERT_EQ(r->unmatched_target.size(), 1u);
  EXPECT_EQ(r->unmatched_target[0].name, "d");
  EXPECT_EQ(r->summary.pass, 2);
  // Identical pairs pass, but what could not be compared cannot be shown equivalent: unmatched records
  // (not ops inside a compared module) fail the run.
  EXPECT_EQ(r->summary.verdict, Verdict::kFail);
  EXPECT_EQ(r->summary.unmatched_implementation, 0);
}

// Hugging Face's eager attention takes a mask and returns its weights, its sdpa attention neither: extra
// inputs / outputs of a module compared on both sides are implementation records; a missing parameter, or
// an output of the root (the model's own result), still fails the run.
TEST(ComparePairing, OneSidedInputsAndOutputsOfAComparedModuleAreImplementation) {
  auto event = [](MemorySource& s, const std::string& module, const std::string& rest, const std::string& role) {
    Record& r = s.add(module + rest, ramp(16));
    r.module = module;
    r.op = "LlamaAttention";
    r.role = role;
  };
  MemorySource g, t;
  for (MemorySource* s : {&g, &t}) event(*s, "attn", "/forward/output/0", "output");
  event(g, "attn", "/forward/input/1", "input");    // the mask
  event(g, "attn", "/forward/output/1", "output");  // the attention weights
  event(g, "attn", "#1/forward/output/1", "output");
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // attn#1 is a second call of attn, whose module path "attn" is compared
  EXPECT_EQ(r->summary.unmatched_golden, 3);
  EXPECT_EQ(r->summary.unmatched_implementation, 3);
  EXPECT_EQ(r->summary.verdict, Verdict::kPass);

  MemorySource g2 = g, t2 = t;
  event(g2, "attn", "/forward/parameter/weight", "parameter");  // a weight on one side only
  Result<CompareResult> r2 = run_compare(g2, t2, compare_options());
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->summary.unmatched_implementation, 3);
  EXPECT_EQ(r2->summary.verdict, Verdict::kFail);

  MemorySource g3 = g, t3 = t;
  for (MemorySource* s : {&g3, &t3}) event(*s, "<root>", "/forward/output/0", "output");
  event(g3, "<root>", "/forward/output/1", "output");  // the model returns one more tensor on one side
  Result<CompareResult> r3 = run_compare(g3, t3, compare_options());
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(r3->summary.verdict, Verdict::kFail);
}

TEST(ComparePairing, KeyIncludesStepAndRankAndFiltersApply) {
  MemorySource g, t;
  g.add("x", ramp(8)).step = 0;
  g.add("x", ramp(8, 2.0f)).step = 1;
  t.add("x", ramp(8, 2.0f)).step = 1;
  t.add("x", ramp(8)).step = 0;
  Result<CompareResult> all = run_compare(g, t, compare_options());
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->rows.size(), 2u);
  EXPECT_EQ(all->summary.pass, 2);  // step 0 with step 0, step 1 with step 1
  EXPECT_TRUE(all->unmatched_golden.empty());

  CompareOptions o = compare_options();
  o.step = 1;
  Result<CompareResult> one = run_compare(g, t, o);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->rows.size(), 1u);
  EXPECT_EQ(one->rows[0].golden->step, 1);
  EXPECT_TRUE(one->unmatched_golden.empty());
  EXPECT_TRUE(one->unmatched_target.empty());
  EXPECT_EQ(one->summary.verdict, Verdict::kPass);
}

TEST(ComparePairing, DuplicateKeysPairInOrderAndExtrasStayUnmatched) {
  RecordList g(3), t(2);
  for (auto* v : {&g, &t}) {
    for (Record& r : *v) r.name = "same";
  }
  matching::ExactPairing p = matching::pair_exact(g, t, {});
  ASSERT_EQ(p.pairs.size(), 2u);
  EXPECT_EQ(p.pairs[0], (std::pair<size_t, size_t>{0, 0}));
  EXPECT_EQ(p.pairs[1], (std::pair<size_t, size_t>{1, 1}));
  ASSERT_EQ(p.unmatched_golden.size(), 1u);
  EXPECT_EQ(p.unmatched_golden[0], 2u);
}

// Occurrences of several names interleaved (a module called twice, its ops repeated): each golden
// record takes the earliest target record of its name still free, whatever lies between them.
TEST(ComparePairing, InterleavedRepeatsPairInListingOrderPerName) {
  const char* golden_names[] = {"b", "a", "a", "b", "a", "a"};
  const char* target_names[] = {"a", "b", "a", "c", "a", "b"};
  RecordList g(6), t(6);
  for (size_t i = 0; i < 6; ++i) {
    g[i].name = golden_names[i];
    t[i].name = target_names[i];
  }
  matching::ExactPairing p = matching::pair_exact(g, t, {});
  const std::vector<std::pair<size_t, size_t>> want = {{0, 1}, {1, 0}, {2, 2}, {3, 5}, {4, 4}};
  EXPECT_EQ(p.pairs, want);
  EXPECT_EQ(p.unmatched_golden, std::vector<size_t>{5});
  EXPECT_EQ(p.unmatched_target, std::vector<size_t>{3});
}

TEST(ComparePairing, TwoSingleTensorSourcesPairDespiteTheirNames) {
  MemorySource g, t;
  g.add("golden.npy", ramp(8));
  t.add("target.npy", ramp(8));
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0].target->name, "target.npy");
  EXPECT_TRUE(r->unmatched_golden.empty());
  bool noted = false;
  for (const std::string& n : r->notes) noted = noted || n.find("single tensor") != std::string::npos;
  EXPECT_TRUE(noted);
  // With a second tensor on one side the names decide again.
  t.add("other.npy", ramp(8));
  Result<CompareResult> two = run_compare(g, t, compare_options());
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->rows.size(), 0u);
  EXPECT_EQ(two->unmatched_target.size(), 2u);
}

TEST(ComparePairing, StepFilterOnPlainFilesIsNotedNotApplied) {
  MemorySource g, t;
  g.add("a", ramp(8));
  t.add("a", ramp(8));
  CompareOptions o = compare_options();
  o.step = 3;
  Result<CompareResult> r = run_compare(g, t, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rows.size(), 1u);
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes[0].find("carry no step"), std::string::npos);
}

TEST(CompareShapes, DifferentCountIsAnErrorWithoutMetrics) {
  MemorySource g, t;
  g.add("w", ramp(6), {2, 3});
  t.add("w", ramp(9), {3, 3});
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0].verdict, Verdict::kError);
  EXPECT_FALSE(r->rows[0].metrics.has_value());
  EXPECT_NE(r->rows[0].reason.find("shapes differ"), std::string::npos);
  EXPECT_NE(r->rows[0].reason.find("[2, 3]"), std::string::npos);
}

TEST(CompareShapes, SameCountDifferentShapeIsComparedFlatAndFlagged) {
  MemorySource g, t;
  g.add("w", ramp(6), {2, 3});
  t.add("w", ramp(6), {3, 2});
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok());
  const CompareRow& row = r->rows.at(0);
  EXPECT_TRUE(row.shape_differs);
  ASSERT_TRUE(row.metrics.has_value());
  EXPECT_EQ(row.metrics->max_abs, 0.0);
  EXPECT_EQ(row.verdict, Verdict::kWarn);
  EXPECT_NE(row.reason.find("shapes differ"), std::string::npos);
}

TEST(CompareErrors, UnreadableTensorIsARowErrorAndTheRestContinues) {
  MemorySource g, t;
  g.add("ok", ramp(32));
  g.add("broken", ramp(32));
  t.add("ok", ramp(32));
  t.add("broken", ramp(32));
  t.drop_data("broken");
  t.add_problem(Status::Invalid("target/bad.npy: header claims 4096 bytes of data, file has 100"));
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(find_row(*r, "ok")->verdict, Verdict::kPass);
  const CompareRow* broken = find_row(*r, "broken");
  EXPECT_EQ(broken->verdict, Verdict::kError);
  EXPECT_NE(broken->reason.find("broken.npy"), std::string::npos);
  EXPECT_EQ(r->summary.problems, 1);
  EXPECT_EQ(r->golden_problems, 0);
  EXPECT_EQ(r->summary.verdict, Verdict::kError);
}

TEST(CompareTensor, PerturbedLayerFailsAndNoiseWarnsOrPasses) {
  MemorySource g, t;
  std::vector<float> base = ramp(4096, 3.0f);
  g.add("same", base);
  t.add("same", base);
  g.add("noisy", base);
  std::vector<float> noisy = base;
  for (size_t i = 0; i < noisy.size(); ++i) noisy[i] *= 1.0f + 1e-4f * static_cast<float>(static_cast<int>(i % 7) - 3);
  t.add("noisy", noisy);
  g.add("broken", base);
  std::vector<float> broken = ramp(4096, 3.0f, 0.0f);
  for (size_t i = 0; i < broken.size(); i += 2) broken[i] = -broken[i];
  t.add("broken", broken);
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(find_row(*r, "same")->verdict, Verdict::kPass);
  EXPECT_EQ(find_row(*r, "same")->reason, "identical");
  EXPECT_EQ(find_row(*r, "noisy")->verdict, Verdict::kPass);
  const CompareRow* b = find_row(*r, "broken");
  EXPECT_EQ(b->verdict, Verdict::kFail);
  EXPECT_NE(b->reason.find("cosine"), std::string::npos);
}

TEST(CompareTensor, LogitsNamesAndKlPatternsGetKl) {
  MemorySource g, t;
  g.add("model.logits", ramp(64), {4, 16});
  t.add("model.logits", ramp(64), {4, 16});
  g.add("head.out", ramp(64), {4, 16});
  t.add("head.out", ramp(64), {4, 16});
  g.add("other", ramp(64), {4, 16});
  t.add("other", ramp(64), {4, 16});
  CompareOptions o = compare_options();
  o.kl_patterns = {"^head\\."};
  Result<CompareResult> r = run_compare(g, t, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(find_row(*r, "model.logits")->metrics->kl_computed);
  EXPECT_TRUE(find_row(*r, "head.out")->metrics->kl_computed);
  EXPECT_FALSE(find_row(*r, "other")->metrics->kl_computed);

  o.kl_patterns = {"(unclosed"};
  Result<CompareResult> bad = run_compare(g, t, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("(unclosed"), std::string::npos);
}

TEST(CompareTensor, ParallelSmallPairsGiveTheSameResultAsOneThread) {
  MemorySource g, t;
  for (int i = 0; i < 400; ++i) {
    const std::string name = std::string("t").append(std::to_string(i));  // (GCC 12 -Wrestrict false positive on "t" + s)
    std::vector<float> v = ramp(16 + i, 1.0f + static_cast<float>(i % 5));
    g.add(name, v);
    if (i % 37 == 0) v[3] += 0.5f;  // a few broken ones
    t.add(name, v);
  }
  CompareOptions one = compare_options();
  one.jobs = 1;
  CompareOptions two = compare_options();
  two.jobs = 2;
  Result<CompareResult> a = run_compare(g, t, one);
  Result<CompareResult> b = run_compare(g, t, two);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->rows.size(), 400u);
  for (size_t i = 0; i < a->rows.size(); ++i) {
    EXPECT_EQ(a->rows[i].golden->name, b->rows[i].golden->name);
    EXPECT_EQ(a->rows[i].verdict, b->rows[i].verdict);
    EXPECT_EQ(a->rows[i].metrics->max_abs, b->rows[i].metrics->max_abs);
  }
  EXPECT_EQ(a->summary.pass + a->summary.warn + a->summary.fail + a->summary.error, 400);
  EXPECT_GT(a->summary.pass, 0);
  EXPECT_GT(a->summary.fail + a->summary.warn, 0);
}

class CountingProgress final : public ProgressSink {
 public:
  void begin(const char*, int64_t t, const char* unit) override { total = t; unit_ = unit; }
  void advance(int64_t n) override { done += n; }
  void end() override { ended = true; }
  int64_t total = 0;
  std::atomic<int64_t> done{0};
  std::string unit_;
  bool ended = false;
};

TEST(CompareTensor, ProgressCountsBytesOfBothSides) {
  MemorySource g, t;
  g.add("a", ramp(100));
  t.add("a", ramp(100));
  g.add("b", ramp(1 << 19));  // 2 MiB a side: the one-at-a-time path
  t.add("b", ramp(1 << 19));
  CountingProgress p;
  CompareOptions o = compare_options();
  o.progress = &p;
  ASSERT_TRUE(run_compare(g, t, o).ok());
  EXPECT_EQ(p.unit_, "B");
  EXPECT_EQ(p.total, 2 * 4 * (100 + (1 << 19)));
  EXPECT_EQ(p.done.load(), p.total);
  EXPECT_TRUE(p.ended);
}

// Falcon's decoder layers receive eager attention's additive mask (0 / finfo.min) in one run and SDPA's
// boolean mask (True = attend) in the other: the same mask, compared as such; a position where the two
// masks disagree fails. Either boolean convention is read (masked_fill masks hold True where masked).
TEST(CompareTensor, BooleanMaskFacingItsAdditiveMaskIsTheSameMask) {
  const float lo = -std::numeric_limits<float>::max();
  std::vector<float> additive;
  std::vector<bool> attends, masked;
  for (int q = 0; q < 8; ++q)
    for (int k = 0; k < 8; ++k) {  // causal
      additive.push_back(k <= q ? 0.0f : lo);
      attends.push_back(k <= q);
      masked.push_back(k > q);
    }
  auto row_of = [&](const std::vector<bool>& target_mask) {
    MemorySource g, t;
    g.add("layer/forward/input/1", additive);
    t.add_bool("layer/forward/input/1", target_mask);
    CompareResult r = run_compare(g, t, compare_options()).value();
    EXPECT_EQ(r.rows.size(), 1u);
    return r.rows.at(0);
  };
  const CompareRow same = row_of(attends);
  EXPECT_EQ(same.verdict, Verdict::kPass) << same.reason;
  EXPECT_NE(same.reason.find("target boolean mask (True = attend) read as the additive mask"), std::string::npos)
      << same.reason;
  const CompareRow inverted = row_of(masked);
  EXPECT_EQ(inverted.verdict, Verdict::kPass) << inverted.reason;
  EXPECT_NE(inverted.reason.find("(True = masked)"), std::string::npos) << inverted.reason;
  std::vector<bool> leaky = attends;
  leaky[1] = true;  // the first query sees the second key
  EXPECT_NE(row_of(leaky).verdict, Verdict::kPass);
  // Data that is not a mask (values other than 0 and one large negative constant) is compared as numbers.
  std::vector<float> scores = additive;
  scores[0] = 0.5f;
  MemorySource g, t;
  g.add("layer/forward/input/1", scores);
  t.add_bool("layer/forward/input/1", attends);
  const CompareResult r = run_compare(g, t, compare_options()).value();
  EXPECT_EQ(r.rows.at(0).reason.find("boolean mask"), std::string::npos);
  EXPECT_EQ(r.rows.at(0).verdict, Verdict::kFail);
}

// What a name filter hides but still measures (decision_context): the block a decision steers — a router's
// top-k, an integer output computed from float inputs — and nothing else of a one-step run.
TEST(ComparePairing, HiddenRowsOfADecisionBlockAreContext) {
  std::vector<Record> recs;
  auto rec = [&](const std::string& name, const std::string& module, const std::string& role, DType dtype,
                 int64_t step = 0) {
    Record r;
    r.name = name;
    r.module = module;
    r.role = role;
    r.direction = name.find("/backward/") != std::string::npos ? "backward" : "forward";
    r.dtype = dtype;
    r.step = step;
    r.rank = 0;
    recs.push_back(r);
  };
  rec("l0.mlp.gate/topk#0/forward/input/0", "l0.mlp.gate", "input", DType::kF32);
  rec("l0.mlp.gate/topk#0/forward/output/1", "l0.mlp.gate", "output", DType::kI64);
  rec("l0.mlp.experts/forward/output/0", "l0.mlp.experts", "output", DType::kF32);
  rec("l0.mlp.experts/backward/input/0", "l0.mlp.experts", "input", DType::kF32);
  rec("l1.attn/forward/output/0", "l1.attn", "output", DType::kF32);
  rec("l0.embed/forward/output/0", "l0.embed", "output", DType::kI64);  // no float input: no decision
  std::vector<const Record*> golden;
  for (const Record& r : recs) golden.push_back(&r);
  // `--include /backward/` hides every forward row.
  std::vector<bool> hidden(recs.size(), true);
  hidden[3] = false;
  EXPECT_EQ(decision_context(golden, hidden), (std::vector<bool>{true, true, true, false, false, false}));
  // Nothing hidden: nothing is context.
  EXPECT_EQ(decision_context(golden, std::vector<bool>(recs.size(), false)), std::vector<bool>(recs.size(), false));
  // Parameters of a run with several steps carry state into the next step.
  rec("l1.attn/forward/parameter/weight", "l1.attn", "parameter", DType::kF32, 1);
  golden.clear();
  for (const Record& r : recs) golden.push_back(&r);
  EXPECT_TRUE(decision_context(golden, std::vector<bool>(recs.size(), true)).back());
}

TEST(CompareStatistics, MsprobeRuleOnStoredStatistics) {
  MemorySource g, t;
  g.add_meta("close", {10}).stats = stats(-1, 1, 0.1, 3);
  t.add_meta("close", {10}).stats = stats(-1.001, 1.002, 0.1001, 3.003);
  g.add_meta("far", {10}).stats = stats(-1, 1, 0.1, 3);
  t.add_meta("far", {10}).stats = stats(-1, 1, 0.1, 4.6);  // Norm rel err 0.533 > 0.5
  g.add_meta("nan", {10}).stats = stats(-1, 1, 0.1, 3);
  TensorStats with_nan = stats(-1, 1, 0.1, 3);
  with_nan.nan_count = 2;
  t.add_meta("nan", {10}).stats = with_nan;
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok());
  const CompareRow* close = find_row(*r, "close");
  EXPECT_EQ(close->mode, CompareMode::kStatistics);
  EXPECT_EQ(close->verdict, Verdict::kPass);
  ASSERT_TRUE(close->stats.has_value());
  const StatsDifferences d = stats_differences(*close);
  EXPECT_NEAR(d.norm_diff, 0.003, 1e-12);
  EXPECT_NEAR(d.norm_rel, 0.001, 1e-12);
  EXPECT_NEAR(d.max_rel, 0.002, 1e-12);
  EXPECT_NEAR(d.worst_rel, 0.002, 1e-12);
  const CompareRow* far = find_row(*r, "far");
  EXPECT_EQ(far->verdict, Verdict::kWarn);
  EXPECT_NE(far->reason.find("Norm"), std::string::npos);
  EXPECT_EQ(find_row(*r, "nan")->verdict, Verdict::kFail);
}

TEST(CompareStatistics, GoldenZeroStatisticIsUnboundedRelativeError) {
  const TensorStats g = stats(0, 1, 0, 2), t = stats(0, 1, 0.01, 2);
  StatsDifferences s = compare::compare_stats(g, t);
  EXPECT_EQ(s.min_rel, 0.0);  // both 0
  EXPECT_TRUE(std::isnan(s.mean_rel));
  EXPECT_TRUE(std::isnan(s.worst_rel));
  EXPECT_EQ(compare::judge_stats(g, t, s, default_thresholds().for_dtype(DType::kF32)).verdict, Verdict::kWarn);
}

TEST(CompareStatistics, AllNanOnBothSidesAgrees) {
  TensorStats g = stats(kNaN, kNaN, kNaN, kNaN);
  g.nan_count = 10;
  StatsDifferences s = compare::compare_stats(g, g);
  EXPECT_EQ(s.worst_rel, 0.0);
  EXPECT_EQ(compare::judge_stats(g, g, s, default_thresholds().for_dtype(DType::kF32)).verdict, Verdict::kPass);
}

TEST(CompareStatistics, DataOnOneSideIsSummarisedThenCompared) {
  MemorySource g, t;
  std::vector<float> v = {1, -2, 3, 4};
  g.add("mixed", v);
  TensorStats ts = stats(-2, 4, 1.5, std::sqrt(30.0), 4);
  t.add_meta("mixed", {4}).stats = ts;
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok());
  const CompareRow& row = r->rows.at(0);
  EXPECT_EQ(row.mode, CompareMode::kStatistics);
  EXPECT_EQ(row.verdict, Verdict::kPass) << row.reason;
  // The golden side's statistics were computed from its data and are held by the row; the target's
  // are its record's.
  ASSERT_TRUE(row.stats->golden_computed.has_value());
  EXPECT_FALSE(row.stats->target_computed.has_value());
  EXPECT_NEAR(golden_stats(row).l2norm, std::sqrt(30.0), 1e-9);
  EXPECT_EQ(&target_stats(row), &*row.target->stats);
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes[0].find("statistics"), std::string::npos);
}

TEST(CompareChecksum, EqualPassesDifferentFails) {
  MemorySource g, t;
  g.add_meta("eq", {4}).crc32c = 0xdeadbeefu;
  t.add_meta("eq", {4}).crc32c = 0xdeadbeefu;
  g.add_meta("ne", {4}).crc32c = 0x1u;
  t.add_meta("ne", {4}).crc32c = 0x2u;
  Record& gx = g.add_meta("dtypes", {4});
  gx.crc32c = 0x1u;
  Record& tx = t.add_meta("dtypes", {4});
  tx.crc32c = 0x1u;
  tx.dtype = DType::kBF16;
  Result<CompareResult> r = run_compare(g, t, compare_options());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(find_row(*r, "eq")->mode, CompareMode::kChecksum);
  EXPECT_EQ(find_row(*r, "eq")->verdict, Verdict::kPass);
  EXPECT_EQ(find_row(*r, "eq")->checksum_equal, true);
  EXPECT_EQ(find_row(*r, "ne")->verdict, Verdict::kFail);
  EXPECT_EQ(find_row(*r, "ne")->checksum_equal, false);
  // Checksums of different dtypes say nothing; with nothing else to compare the row is "none".
  const CompareRow* d = find_row(*r, "dtypes");
  EXPECT_EQ(d->mode, CompareMode::kNone);
  EXPECT_EQ(d->verdict, Verdict::kError);
  EXPECT_NE(d->reason.find("nothing both sides share"), std::string::npos);
}

// ---- judgement at the threshold edges ------------------------------------------------------------

PairMetrics metrics(double cosine, double max_abs, double rel_l2 = 1e-4) {
  PairMetrics m;
  m.numel = m.compared = 100;
  m.cosine = cosine;
  m.max_abs = max_abs;
  m.rel_l2 = rel_l2;
  m.max_rel = 1e-3;
  m.golden.l2norm = m.target.l2norm = 1.0;
  return m;
}

TEST(Judge, CosineAndMaxAbsEdgesForF32) {
  const DTypeThresholds th = default_thresholds().for_dtype(DType::kF32);  // a copy: the Thresholds is a temporary
  using compare::judge_tensor;
  EXPECT_EQ(judge_tensor(metrics(0.999, 1e-3), th).verdict, Verdict::kPass);  // "≥ 0.999" passes
  EXPECT_EQ(judge_tensor(metrics(0.99899, 1e-3), th).verdict, Verdict::kWarn);
  EXPECT_EQ(judge_tensor(metrics(0.99, 0.5), th).verdict, Verdict::kWarn);     // not < 0.99
  EXPECT_EQ(judge_tensor(metrics(0.985, 0.001), th).verdict, Verdict::kWarn);  // max abs not > 0.001
  EXPECT_EQ(judge_tensor(metrics(0.985, 0.0011), th).verdict, Verdict::kFail);
  EXPECT_EQ(judge_tensor(metrics(0.9, 1e-5), th).verdict, Verdict::kWarn);     // not < 0.9
  EXPECT_EQ(judge_tensor(metrics(0.8999, 1e-5), th).verdict, Verdict::kFail);
  EXPECT_EQ(judge_tensor(metrics(0.99999, 1.0), th).verdict, Verdict::kPass);  // not > 1
  EXPECT_EQ(judge_tensor(metrics(0.99999, 1.0001), th).verdict, Verdict::kFail);
  EXPECT_EQ(judge_tensor(metrics(0.99999, 0.1, 0.01), th).verdict, Verdict::kPass);
  EXPECT_EQ(judge_tensor(metrics(0.99999, 0.1, 0.0101), th).verdict, Verdict::kWarn);
}

TEST(Judge, Bf16HasNoAbsoluteRuleAndLooserKl) {
  const Thresholds all = default_thresholds();
  const DTypeThresholds& bf16 = all.for_dtype(DType::kBF16);
  EXPECT_EQ(compare::judge_tensor(metrics(0.9999, 4.0), bf16).verdict, Verdict::kPass);
  PairMetrics m = metrics(0.99999, 0.01);
  m.kl_computed = true;
  m.kl = 0.004;
  EXPECT_EQ(compare::judge_tensor(m, bf16).verdict, Verdict::kPass);
  m.kl = 0.005;
  EXPECT_EQ(compare::judge_tensor(m, bf16).verdict, Verdict::kWarn);  // KL < 0.005 to pass
  m.kl = 2e-4;
  EXPECT_EQ(compare::judge_tensor(m, all.for_dtype(DType::kF16)).verdict, Verdict::kWarn);
  EXPECT_EQ(lower_precision(DType::kF32, DType::kBF16), DType::kBF16);
  EXPECT_EQ(lower_precision(DType::kF16, DType::kBF16), DType::kBF16);
  EXPECT_EQ(lower_precision(DType::kI32, DType::kF16), DType::kF16);
  EXPECT_EQ(all.for_dtype(DType::kF64).cosine_pass, all.fallback.cosine_pass);
}

TEST(Judge, NonFiniteMismatchIsAnErrorAndEdgeCasesAreNamed) {
  const DTypeThresholds th = default_thresholds().for_dtype(DType::kF32);  // a copy: the Thresholds is a temporary
  PairMetrics m = metrics(1.0, 0.0);
  m.nonfinite_agree = false;
  m.nonfinite_mismatch = 3;
  compare::Judgement j = compare::judge_tensor(m, th);
  EXPECT_EQ(j.verdict, Verdict::kError);
  EXPECT_NE(j.reason.find("3 elements"), std::string::npos);

  PairMetrics empty;
  EXPECT_EQ(compare::judge_tensor(empty, th).reason, "empty tensors");

  PairMetrics zero = metrics(kNaN, 0.5, kNaN);
  zero.golden.l2norm = 0.0;
  j = compare::judge_tensor(zero, th);
  EXPECT_EQ(j.verdict, Verdict::kFail);
  EXPECT_NE(j.reason.find("golden is all zero"), std::string::npos);
}

}  // namespace
}  // namespace parity
