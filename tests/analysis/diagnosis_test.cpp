// Diagnosis rules on synthetic compare results: each rule fires on its symptom with evidence naming the
// events, and stays quiet on the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "analysis/synth.h"
#include "parity/diagnosis.h"

namespace parity {
namespace {

using test::Synth;

std::vector<std::string> codes(const Findings& f) {
  std::vector<std::string> c;
  for (const Diagnosis& d : f.diagnoses) c.push_back(d.code);
  return c;
}

bool has(const Findings& f, const std::string& code) {
  auto c = codes(f);
  return std::find(c.begin(), c.end(), code) != c.end();
}

const Diagnosis* find(const Findings& f, const std::string& code) {
  for (const Diagnosis& d : f.diagnoses)
    if (d.code == code) return &d;
  return nullptr;
}

TEST(Diagnosis, EveryRuleIsRegisteredOnce) {
  std::vector<std::string> c;
  for (const Rule& r : registered_rules()) c.push_back(r.code);
  for (const char* code : {"INPUT_MISMATCH", "WEIGHT_MISMATCH", "OVERFLOW", "GRAD_OVERFLOW", "GRAD_UNDERFLOW",
                           "LOW_PRECISION_SENSITIVE_OP", "FLUSH_TO_ZERO", "OUTLIERS", "ACCUMULATION_NOISE",
                           "NONDETERMINISM", "DRIFT_AFTER_STEPS", "RANK_INCONSISTENT", "CONFIG_DIFF",
                           "QUANT_SENSITIVE_LAYER", "TRAIN_INFER_MISMATCH", "OP_ARGUMENT_MISMATCH", "LOSS_SCALE",
                           "DECISION_FLIP", "STRUCTURE_DIFF", "UPDATE_LOST_TO_ROUNDING", "NO_CAUSE_FOUND"})
    EXPECT_EQ(std::count(c.begin(), c.end(), code), 1) << code;
  EXPECT_EQ(c.size(), 21u);
  EXPECT_EQ(c.back(), "NO_CAUSE_FOUND");  // last: it reads every other rule's diagnoses
}

// Rows are classified once (issue 32 §2): the compare pipeline classifies before the verdict policy
// reads the classes; the analysis and the diagnoses then keep them. A result nobody classified is
// classified there.
TEST(Diagnosis, RowsAreClassifiedOnce) {
  Synth s;
  s.module("embed", "Embedding", 0, 1e-3, DType::kBF16);
  s.module("layers.0.attn_norm", "RMSNorm", 1e-3, 0.4, DType::kBF16);
  ASSERT_FALSE(s.result.classified);
  classify_rows(s.result);
  ASSERT_TRUE(s.result.classified);
  // what the pipeline's verdict policy judged: a later classification must not move it
  for (CompareRow& row : s.result.rows) row.noise = NoiseClass::kElevated, row.noise_ratio = 7;
  (void)analyse_and_diagnose(s.result, nullptr, nullptr);
  for (const CompareRow& row : s.result.rows) {
    EXPECT_EQ(row.noise, NoiseClass::kElevated);
    EXPECT_EQ(row.noise_ratio, 7);
  }
  Synth fresh;
  fresh.module("layers.0.attn_norm", "RMSNorm", 1e-3, 0.4, DType::kBF16);
  (void)analyse_and_diagnose(fresh.result, nullptr, nullptr);
  EXPECT_TRUE(fresh.result.classified);
  EXPECT_NE(fresh.result.rows.front().noise, NoiseClass::kUnknown);
}

TEST(Diagnosis, LowPrecisionNormIsNamedWithTheFp32UpcastAdvice) {
  Synth s;
  s.module("embed", "Embedding", 0, 1e-3, DType::kBF16);
  s.module("layers.0.attn_norm", "RMSNorm", 1e-3, 0.4, DType::kBF16);
  s.module("layers.0.attn", "Attention", 0.4, 0.45, DType::kBF16);
  Findings f = analyse_and_diagnose(s.result, nullptr, nullptr);
  ASSERT_FALSE(f.diagnoses.empty());
  EXPECT_EQ(f.diagnoses[0].code, "LOW_PRECISION_SENSITIVE_OP");
  EXPECT_EQ(f.diagnoses[0].events[0], "layers.0.attn_norm/forward");
  EXPECT_NE(f.diagnoses[0].advice.find("x.float()"), std::string::npos);
  EXPECT_FALSE(has(f, "ACCUMULATION_NOISE"));
}

// The same norm in fp32 on both sides: its error cannot be a precision problem, whatever the op.
TEST(Diagnosis, LowPrecisionNeedsALowPrecisionDtype) {
  Synth s;
  s.module("embed", "Embedding", 0, 1e-7);
  s.module("layers.0.attn_norm", "RMSNorm", 1e-7, 0.4);
  s.module("layers.0.attn", "Attention", 0.4, 0.45);
  Findings f = analyse_and_diagnose(s.result, nullptr, nullptr);
  ASSERT_FALSE(f.analysis.suspects.empty());
  EXPECT_EQ(f.analysis.suspects[0].name, "layers.0.attn_norm/forward");
  EXPECT_FALSE(has(f, "LOW_PRECISION_SENSITIVE_OP"));
  EXPECT_FALSE(has(f, "NONDETERMINISM"));  // identical configuration is not evidence of randomness
}

// Issue 28: a LayerNorm computed by a hand-written fp16 kernel in the target (casts, its own mean and
// variance: ops the golden's one fused layer_norm does not have) keeps fp32 module rows; the kernel's f16
// ops are unmatched, and they are the evidence that low precision takes part.
TEST(Diagnosis, LowPrecisionSeenInOpsPresentInOneRunOnly) {
  Synth s;
  s.module("embed", "Embedding", 0, 1e-7);
  s.row("layers.0.ln", "LayerNorm", "forward", "input", 0, 1e-7);
  s.row("layers.0.ln", "LayerNorm", "forward", "output", 0, 0.4);
  s.module("layers.0.attn", "Attention", 0.4, 0.45);
  Findings without = analyse_and_diagnose(s.result, nullptr, nullptr);
  EXPECT_FALSE(has(without, "LOW_PRECISION_SENSITIVE_OP"));
  Record half;  // the kernel's fp16 cast, between the module's input and output
  half.name = "layers.0.ln/half#0/forward/output/0";
  half.module = "layers.0.ln";
  half.op = "half";
  half.direction = "forward";
  half.role = "output";
  half.dtype = DType::kF16;
  half.step = 0;
  half.rank = 0;
  half.order = s.result.rows[3].golden->order;  // inside the module's event (its input 2, output 3)
  s.result.unmatched_target.push_back(half);
  Findings f = analyse_and_diagnose(s.result, nullptr, nullptr);
  const Diagnosis* d = find(f, "LOW_PRECISION_SENSITIVE_OP");
  ASSERT_NE(d, nullptr);
  std::string text;
  for (const std::string& e : d->evidence) text += e + "\n";
  EXPECT_NE(text.find("layers.0.ln/half#0/forward/output/0 inside it, present in the target only, is f16"),
            std::string::npos) << text;
}

// Issue 28: a softmax computed in f16 inside an fp32 attention is within f16 rounding as an op; the fp32
// ops after it carry the f16 rounding, so the attention module is the source, and the softmax whose
// precision the target lowered is named.
TEST(Diagnosis, ASensitiveOpLoweredInsideASourceModuleIsNamed) {
  Synth s;
  s.module("embed", "Embedding", 0, 1e-7);
  s.row("layers.0.attn", "Attention", "forward", "input", 0, 1e-7);
  s.row("layers.0.attn", "softmax", "forward", "input", 0, 1e-7, DType::kF32, DType::kF16);
  s.row("layers.0.attn", "softmax", "forward", "output", 0, 2e-4, DType::kF32, DType::kF16);
  s.row("layers.0.attn", "Attention", "forward", "output", 0, 0.3);
  s.module("layers.0.mlp", "MLP", 0.3, 0.35);
  Findings f = analyse_and_diagnose(s.result, nullptr, nullptr);
  const Diagnosis* d = find(f, "LOW_PRECISION_SENSITIVE_OP");
  ASSERT_NE(d, nullptr);
  std::string text;
  for (const std::string& e : d->evidence) text += e + "\n";
  EXPECT_NE(text.find("layers.0.attn/softmax#0/forward/input/0 inside it computes in f16 in the target, f32 in the "
                      "golden"), std::string::npos) << text;
}

// A random op whose inputs already differ does not show its own randomness.
TEST(Diagnosis, RandomOpWithDifferingInputsIsNotNondeterminism) {
  Synth s;
  s.module("l0.mlp", "MLP", 0, 0.5);
  s.module("l0.drop", "Dropout", 0.5, 40.0);
  EXPECT_FALSE(has(analyse_and_diagnose(s.result, nullptr, nullptr), "NONDETERMINISM"));
}

// A source of op arguments by record name, for OP_ARGUMENT_MISMATCH.
class ArgsSource final : public RecordSource {
 public:
  explicit ArgsSource(std::map<std::string, std::string> args) : args_(std::move(args)) {}
  std::string describe() const override { return "args"; }
  const RecordList& records() const override { return none_; }
  Result<TensorView> load(const Record& r) const override { return Status::Invalid("no data"); }
  const std::vector<Status>& problems() const override { return problems_; }
  std::string op_arguments_json(const Record& r) const override {
    auto it = args_.find(r.name);
    return it == args_.end() ? "" : it->second;
  }

 private:
  std::map<std::string, std::string> args_;
  RecordList none_;
  std::vector<Status> problems_;
};

TEST(Diagnosis, OpArgumentMismatchNamesTheArgumentOnlyWithEvidence) {
  const std::string out = "l0.ln/layer_norm#0/forward/output/0";
  const ArgsSource golden({{out, R"({"args": ["<tensor f32 [4, 64]>", [64], "<tensor>", "<tensor>", 1e-05], "kwargs": {}})"}});
  const ArgsSource target({{out, R"({"args": ["<tensor f32 [4, 64]>", [64], "<tensor>", "<tensor>", 1.0], "kwargs": {}})"}});
  // Same inputs, other eps, another output: the argument made the difference.
  Synth s;
  s.row("l0.ln", "layer_norm", "forward", "input", 0, 1e-8);
  s.row("l0.ln", "layer_norm", "forward", "output", 0, 0.2);
  Findings f = analyse_and_diagnose(s.result, &golden, &target);
  ASSERT_TRUE(has(f, "OP_ARGUMENT_MISMATCH"));
  const Diagnosis* d = find(f, "OP_ARGUMENT_MISMATCH");
  EXPECT_EQ(d->strength, 3);
  EXPECT_NE(d->evidence[0].find("l0.ln/layer_norm#0/forward: eps 1e-05 → 1.0"), std::string::npos) << d->evidence[0];
  // The same arguments: silent.
  EXPECT_FALSE(has(analyse_and_diagnose(s.result, &golden, &golden), "OP_ARGUMENT_MISMATCH"));
  // Inputs that differ too: the output difference may be theirs, and the call may not be the same one.
  Synth in;
  in.row("l0.ln", "layer_norm", "forward", "input", 0, 0.3);
  in.row("l0.ln", "layer_norm", "forward", "output", 0, 0.3);
  EXPECT_FALSE(has(analyse_and_diagnose(in.result, &golden, &target), "OP_ARGUMENT_MISMATCH"));
  // A pair found only by order alignment is not the same call site: silent.
  s.result.rows[1].match = MatchKind::kAligned;
  EXPECT_FALSE(has(analyse_and_diagnose(s.result, &golden, &target), "OP_ARGUMENT_MISMATCH"));
}

// HF's RMSNorm adds its eps as a bare float (`variance + self.variance_epsilon`): capture records which
// module attribute the argument equals ("names"), and the finding says eps, not "argument 1".
TEST(Diagnosis, OpArgumentMismatchNamesAModuleAttributeArgument) {
  const std::string out = "l0.norm/add#0/forward/output/0";
  const ArgsSource golden({{out, R"({"args": ["<tensor f32 [4, 1]>", 1e-06], "kwargs": {}, "names": {"1": "variance_epsilon"}})"}});
  const ArgsSource target({{out, R"({"args": ["<tensor bf16 [4, 1]>", 1.0], "kwargs": {}, "names": {"1": "variance_epsilon"}})"}});
  Synth s;
  s.row("l0.norm", "add", "forward", "input", 0, 1e-8);
  s.row("l0.norm", "add", "forward", "output", 0, 0.2);
  const Findings named = analyse_and_diagnose(s.result, &golden, &target);
  const Diagnosis* d = find(named, "OP_ARGUMENT_MISMATCH");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->evidence[0].find("l0.norm/add#0/forward: eps 1e-06 → 1.0 (the module's variance_epsilon, argument 1)"),
            std::string::npos) << d->evidence[0];
  // No attribute recorded: the position.
  const ArgsSource plain_g({{out, R"({"args": ["<tensor f32 [4, 1]>", 1e-06], "kwargs": {}})"}});
  const ArgsSource plain_t({{out, R"({"args": ["<tensor f32 [4, 1]>", 1.0], "kwargs": {}})"}});
  const Findings plain = analyse_and_diagnose(s.result, &plain_g, &plain_t);
  const Diagnosis* p = find(plain, "OP_ARGUMENT_MISMATCH");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->evidence[0].find("argument 1 1e-06 → 1.0"), std::string::npos) << p->evidence[0];
}

TEST(Diagnosis, OverflowNamesTheOpAndItsInputRange) {
  Synth s;
  s.row("l0.attn", "softmax", "forward", "input", 0, 0).metrics->target.max = 11.3;
  s.row("l0.attn", "softmax", "forward", "output", 0, 0, DType::kF32, DType::kF32, 0, 0, 8);
  s.row("l0.mlp", "MLP", "forward", "output", 0, 0, DType::kF32, DType::kF32, 0, 0, 30);
  Findings f = analyse_and_diagnose(s.result, nullptr, nullptr);
  ASSERT_FALSE(f.diagnoses.empty());
  EXPECT_EQ(f.diagnoses[0].code, "OVERFLOW");
  EXPECT_EQ(f.diagnoses[0].events[0], "l0.attn/softmax#0/forward");
  std::string all;
  for (const auto& e : f.diagnoses[0].evidence) all += e + "\n";
  EXPECT_NE(all.find("exp overflows in f16"), std::string::npos) << all;
  EXPECT_NE(all.find("1 later events"), std::string::npos) << all;
  EXPECT_FALSE(has(f, "LOW_PRECISION_SENSITIVE_OP"));  // NaN born: OVERFLOW tells it
}

// T5's relative-position bucket takes log(0) in every run: the same birth in the golden, in the same
// numbers, is the model's own and no finding; a birth in both runs whose numbers differ still warns.
TEST(Diagnosis, TheSameBirthInBothRunsIsNoOverflowFinding) {
  auto run = [](int64_t golden_inf, int64_t target_inf) {
    Synth s;
    s.row("l0.attn", "log", "forward", "input", 0, 0).metrics->target.max = 1.875;
    PairMetrics& out = *s.row("l0.attn", "log", "forward", "output", 0, 0).metrics;
    out.golden.ninf_count = out.golden.inf_count = golden_inf;
    out.target.ninf_count = out.target.inf_count = target_inf;
    out.nonfinite_agree = false;  // as in statistics mode: counts, no positions
    return analyse_and_diagnose(s.result, nullptr, nullptr);
  };
  const Findings same = run(16, 16);
  EXPECT_FALSE(has(same, "OVERFLOW"));
  ASSERT_EQ(same.golden_overflow.origins.size(), 1u);  // still in the overflow report
  ASSERT_EQ(same.target_overflow.origins.size(), 1u);
  const Findings more = run(16, 20);
  const Diagnosis* d = find(more, "OVERFLOW");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kWarn);
  EXPECT_NE(d->evidence[0].find("the golden overflows here too, in other numbers"), std::string::npos) << d->evidence[0];
}

TEST(Diagnosis, GradientOverflowAndUnderflow) {
  Synth over;
  over.module("l0", "Linear", 0, 0);
  over.row("l0", "Linear", "backward", "grad", 0, 0, DType::kF32, DType::kF32, 0, 0, 0);
  over.result.rows.back().metrics->target.pinf_count = over.result.rows.back().metrics->target.inf_count = 4;
  over.result.rows.back().metrics->nonfinite_agree = false;
  over.result.rows.back().metrics->nonfinite_mismatch = 4;
  Findings fo = analyse_and_diagnose(over.result, nullptr, nullptr);
  EXPECT_TRUE(has(fo, "GRAD_OVERFLOW"));
  EXPECT_FALSE(has(fo, "GRAD_UNDERFLOW"));
  EXPECT_FALSE(has(fo, "OVERFLOW"));  // a gradient, not an op
  EXPECT_EQ(fo.target_overflow.loss_scale_advice, "lower");

  Synth under;
  under.module("l0", "Linear", 0, 0);
  under.row("l0", "Linear", "backward", "grad", 0, 0.9);
  under.result.rows.back().metrics->target.zero_count = 200;  // of 256
  under.result.rows.back().metrics->golden.zero_count = 2;
  Findings fu = analyse_and_diagnose(under.result, nullptr, nullptr);
  EXPECT_TRUE(has(fu, "GRAD_UNDERFLOW"));
  EXPECT_FALSE(has(fu, "GRAD_OVERFLOW"));
  EXPECT_NE(find(fu, "GRAD_UNDERFLOW")->evidence[1].find("78.1 %"), std::string::npos);
}

TEST(Diagnosis, InputsAndWeights) {
  Synth in;
  in.row("<root>", "Llama", "forward", "input", 0, 1.0, DType::kI64, DType::kI64);
  in.module("embed", "Embedding", 1.0, 1.3, DType::kF32, 0);
  Findings fi = analyse_and_diagnose(in.result, nullptr, nullptr);
  ASSERT_FALSE(fi.diagnoses.empty());
  EXPECT_EQ(fi.diagnoses[0].code, "INPUT_MISMATCH");
  EXPECT_FALSE(has(fi, "WEIGHT_MISMATCH"));

  Synth w;
  w.row("<root>", "Llama", "forward", "input", 0, 0, DType::kI64, DType::kI64);
  w.module("embed", "Embedding", 0, 1.4, DType::kF32, 1.4);
  Findings fw = analyse_and_diagnose(w.result, nullptr, nullptr);
  ASSERT_FALSE(fw.diagnoses.empty());
  EXPECT_EQ(fw.diagnoses[0].code, "WEIGHT_MISMATCH");
  EXPECT_EQ(fw.diagnoses[0].events[0], "embed/forward");
  EXPECT_FALSE(has(fw, "INPUT_MISMATCH"));
}

TEST(Diagnosis, RandomOpSourceIsNondeterminism) {
  Synth s;
  s.module("l0.mlp", "MLP", 0, 0);
  s.module("l0.drop", "Dropout", 0, 1.0);
  s.module("l1", "Linear", 1.0, 1.1);
  Findings f = analyse_and_diagnose(s.result, nullptr, nullptr);
  ASSERT_FALSE(f.diagnoses.empty());
  EXPECT_EQ(f.diagnoses[0].code, "NONDETERMINISM");
  EXPECT_EQ(f.diagnoses[0].events[0], "l0.drop/forward");
}

TEST(Diagnosis, BenignDifferencesAreAccumulationNoise) {
  Synth s;
  s.module("l0", "Linear", 0, 1e-7);
  s.module("l1", "Linear", 1e-7, 2e-7);
  Findings f = analyse_and_diagnose(s.result, nullptr, nullptr);
  ASSERT_EQ(f.diagnoses.size(), 1u) << f.diagnoses[0].code;
  EXPECT_EQ(f.diagnoses[0].code, "ACCUMULATION_NOISE");
  EXPECT_EQ(f.analysis.rows_structural, 0);

  Synth same;  // bit-identical: nothing to say
  same.module("l0", "Linear", 0, 0);
  EXPECT_TRUE(analyse_and_diagnose(same.result, nullptr, nullptr).diagnoses.empty());
}

TEST(Diagnosis, DriftRanksOutliersQuantisationConfig) {
  // Step 0 agrees; at step 1 the parameters differ before they are used: drift, named at step 1.
  Synth d;
  d.module("l0", "Linear", 0, 1e-7, DType::kF32, 0, /*step=*/0);
  d.module("l0", "Linear", 0, 0.3, DType::kF32, 0.2, /*step=*/1);
  const Findings fd = analyse_and_diagnose(d.result, nullptr, nullptr);
  ASSERT_TRUE(has(fd, "DRIFT_AFTER_STEPS"));
  EXPECT_EQ(find(fd, "DRIFT_AFTER_STEPS")->events[0], "l0/forward");
  EXPECT_NE(find(fd, "DRIFT_AFTER_STEPS")->evidence[1].find("step 1: 1 parameters differ"), std::string::npos);
  // Same parameters at step 1, yet the output differs: something in step 1 itself, not drift.
  Synth nd;
  nd.module("l0", "Linear", 0, 1e-7, DType::kF32, 0, /*step=*/0);
  nd.module("l0", "Linear", 0, 0.3, DType::kF32, 0, /*step=*/1);
  EXPECT_FALSE(has(analyse_and_diagnose(nd.result, nullptr, nullptr), "DRIFT_AFTER_STEPS"));

  Synth r;
  r.module("l0", "Linear", 0, 1e-7, DType::kF32, -1, 0, /*rank=*/0);
  r.module("l0", "Linear", 0, 0.3, DType::kF32, -1, 0, /*rank=*/1);
  EXPECT_TRUE(has(analyse_and_diagnose(r.result, nullptr, nullptr), "RANK_INCONSISTENT"));

  Synth o;
  CompareRow& row = o.row("l0", "Linear", "forward", "output", 0, 1e-3);
  row.metrics->cosine = 0.99995;
  row.metrics->max_abs = 5.0;
  row.metrics->mean_abs = 1e-3;
  row.metrics->max_abs_index = 70;  // shape [4, 64] → [1, 6]
  row.verdict = Verdict::kFail;
  o.result.thresholds = Thresholds{};
  Findings fo = analyse_and_diagnose(o.result, nullptr, nullptr);
  ASSERT_TRUE(has(fo, "OUTLIERS"));
  EXPECT_NE(find(fo, "OUTLIERS")->evidence[0].find("[1, 6]"), std::string::npos);
  // The same pattern in a row the verdict accepts (warn: elevated) names no cause.
  row.verdict = Verdict::kWarn;
  EXPECT_FALSE(has(analyse_and_diagnose(o.result, nullptr, nullptr), "OUTLIERS"));

  Synth q;
  q.module("l0.attn.q_proj", "QuantLinear", 0, 0, DType::kF32);
  q.module("l0.attn.k_proj", "QuantLinear", 0, 0.2, DType::kI8);
  Findings fq = analyse_and_diagnose(q.result, nullptr, nullptr);
  ASSERT_TRUE(has(fq, "QUANT_SENSITIVE_LAYER"));
  EXPECT_NE(find(fq, "QUANT_SENSITIVE_LAYER")->evidence[0].find("attention path"), std::string::npos);

  Synth c;
  c.module("l0", "Linear", 0, 0);
  c.result.golden_fingerprint = R"({"precision": {"allow_tf32": false}, "model": {"rope_theta": 10000}})";
  c.result.target_fingerprint = R"({"precision": {"allow_tf32": true}, "model": {"rope_theta": 500000}})";
  Findings fc = analyse_and_diagnose(c.result, nullptr, nullptr);
  EXPECT_TRUE(has(fc, "CONFIG_DIFF"));
  EXPECT_TRUE(has(fc, "TRAIN_INFER_MISMATCH"));
  EXPECT_EQ(find(fc, "CONFIG_DIFF")->events[0], "precision.allow_tf32");
  EXPECT_EQ(find(fc, "TRAIN_INFER_MISMATCH")->events[0], "model.rope_theta");
}

}  // namespace
}  // namespace parity

namespace parity {
namespace {

TEST(Diagnosis, NanOriginOnATargetOnlyOpIsTheTopSuspect) {
  // The target computes softmax by hand: its exp op has no golden partner (unmatched), and Inf is born
  // there. The rows can only blame the attention module; the origin names the op.
  Synth s;
  s.row("l0.attn", "Attention", "forward", "input", 0, 0);
  s.row("l0.attn", "Attention", "forward", "output", 0, 0, DType::kF32, DType::kF32, 0, 0, 20);
  s.last_golden().order = 10;
  s.last_target().order = 10;
  for (const char* role : {"input", "output"}) {
    Record r;
    r.name = std::string("l0.attn/exp#0/forward/") + role + "/0";
    r.module = "l0.attn";
    r.op = "exp";
    r.direction = "forward";
    r.role = role;
    r.index = 0;
    r.step = 0;
    r.rank = 0;
    r.order = role[0] == 'i' ? 5 : 6;
    TensorStats st;
    st.numel = 64;
    st.max = st.absmax = 15.2;
    if (role[0] == 'o') st.inf_count = 7;
    r.stats = st;
    s.result.unmatched_target.push_back(r);
  }
  Findings f = analyse_and_diagnose(s.result, nullptr, nullptr);
  ASSERT_GE(f.analysis.suspects.size(), 2u);
  EXPECT_EQ(f.analysis.suspects[0].name, "l0.attn/exp#0/forward");
  EXPECT_EQ(f.analysis.suspects[0].op, "exp");
  EXPECT_EQ(f.analysis.suspects[1].name, "l0.attn/forward");
  ASSERT_FALSE(f.diagnoses.empty());
  EXPECT_EQ(f.diagnoses[0].code, "OVERFLOW");
  EXPECT_EQ(f.diagnoses[0].events[0], "l0.attn/exp#0/forward");
}

}  // namespace
}  // namespace parity
