// Loss scaling recognised and undone (parity/loss_scale.h, docs/judgement.md "Loss scaling"): the detection
// rule on its own, the recorded scaling op, and run_compare on in-memory runs whose target gradients are
// the golden's × 2^k — compared unscaled, by tensors and by statistics, while the overflow analysis still
// reads the values as stored.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "compare/loss_scale_rows.h"
#include "parity/analysis.h"
#include "parity/compare.h"
#include "parity/diagnosis.h"
#include "parity/loss_scale.h"
#include "parity/thresholds.h"

namespace parity {
namespace {

// ---- the rule -----------------------------------------------------------------------------------------

std::vector<double> repeat(double v, int n) { return std::vector<double>(static_cast<size_t>(n), v); }

std::vector<double> concat(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(LossScaleRule, EveryRowAtOnePowerOfTwo) {
  // fp16 rounding moves a norm by ~1e-3 of itself: log2(1 ± 1e-3) ≈ ±0.0015.
  const std::vector<double> r = {12.0, 12.0014, 11.9987, 12.0003, 12.0, 11.9999};
  const std::optional<ScaleEvidence> e = shared_power_of_two(r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->log2_ratio, 12);
  EXPECT_EQ(e->rows_at_ratio, 6);
  EXPECT_EQ(e->rows_measured, 6);
  EXPECT_NEAR(e->max_deviation, 0.0014, 1e-9);
  EXPECT_NEAR(e->median, 12.0, 1e-3);
}

TEST(LossScaleRule, NegativePowersAndAMinorityElsewhere) {
  // The golden scaled more than the target (2^a > 2^b): k = b − a < 0. Rows of cancelled gradients (rounding
  // residue on both sides) fall anywhere; a minority of them does not hide the scale.
  const std::vector<double> r = concat(repeat(-3.0, 7), {4.2, -9.7, 0.3});
  const std::optional<ScaleEvidence> e = shared_power_of_two(r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->log2_ratio, -3);
  EXPECT_EQ(e->rows_at_ratio, 7);
  EXPECT_EQ(e->rows_measured, 10);
}

TEST(LossScaleRule, OneLayerHalvedIsNoScale) {
  // A fault that halves one layer's gradients moves those rows to 2^-1; the rest stay at 2^0.
  EXPECT_FALSE(shared_power_of_two(concat(repeat(0.0, 16), repeat(-1.0, 4))));
  // Halved from the middle of the network down, the halved rows may even be the majority — but the rows
  // nearest the loss, first in backward order, are not scaled: no loss scale did that.
  EXPECT_FALSE(shared_power_of_two(concat(repeat(0.0, 3), repeat(-1.0, 12))));
  // The same rows all halved, from the first on, are what a loss × 0.5 gives.
  EXPECT_TRUE(shared_power_of_two(repeat(-1.0, 15)));
}

TEST(LossScaleRule, NeedsAClearMajorityAnIntegerAndRows) {
  EXPECT_FALSE(shared_power_of_two(concat(repeat(12.0, 5), repeat(11.0, 4))));  // 5 of 9 = 56 % < 60 %
  EXPECT_TRUE(shared_power_of_two(concat(repeat(12.0, 6), repeat(11.0, 4))));   // 60 %
  EXPECT_FALSE(shared_power_of_two(repeat(12.5, 10)));                          // not a power of two
  EXPECT_FALSE(shared_power_of_two(repeat(12.15, 10)));                         // beyond ±0.1
  EXPECT_FALSE(shared_power_of_two(repeat(0.0, 10)));                           // 2^0: nothing to undo
  EXPECT_FALSE(shared_power_of_two({12.0, 12.0}));                              // too few rows
  EXPECT_FALSE(shared_power_of_two(repeat(80.0, 10)));                          // no loss scale is 2^80
}

// ---- the kernel's target scale --------------------------------------------------------------------------

TensorView f32_view(const std::vector<float>& v) {
  std::vector<std::byte> bytes(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return make_owned_tensor(DType::kF32, Shape{static_cast<int64_t>(v.size())}, std::move(bytes));
}

std::vector<float> wave(int n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * std::sin(0.37f * static_cast<float>(i) + 0.1f);
  return v;
}

std::vector<float> times(std::vector<float> v, float f) {
  for (float& x : v) x *= f;
  return v;
}

// Rounding-sized noise on every element: x(1 + 2^-20·(±1)).
std::vector<float> jitter(std::vector<float> v) {
  for (size_t i = 0; i < v.size(); ++i) v[i] *= 1.0f + (i % 2 ? 1.0f : -1.0f) * std::ldexp(1.0f, -20);
  return v;
}

TEST(LossScaleKernel, ScaledTargetComparesLikeThePrescaledOne) {
  // 5000 elements: several blocks, a fused-kernel candidate (fp32, contiguous) when unscaled.
  const std::vector<float> g = wave(5000, 0.01f), t = jitter(g);
  const TensorView gv = f32_view(g), scaled = f32_view(times(t, 4096.0f)), plain = f32_view(t);
  MetricOptions o;
  o.threads = 2;
  Result<PairMetrics> want = compare_tensors(gv, plain, o);
  o.target_scale_log2 = 12;
  Result<PairMetrics> got = compare_tensors(gv, scaled, o);
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_DOUBLE_EQ(got->rel_l2, want->rel_l2);
  EXPECT_DOUBLE_EQ(got->max_abs, want->max_abs);
  EXPECT_EQ(got->max_abs_index, want->max_abs_index);
  EXPECT_DOUBLE_EQ(got->target.l2norm, want->target.l2norm);  // the compared (unscaled) target
  EXPECT_DOUBLE_EQ(got->cosine, want->cosine);
  // Unscaled the comparison would be 4095 of the golden's norm off.
  o.target_scale_log2 = 0;
  EXPECT_GT(compare_tensors(gv, scaled, o)->rel_l2, 4000);
}

TEST(LossScaleKernel, SubnormalsAreCountedAsStored) {
  // 2^-130 is subnormal in fp32; × 2^12 it is 2^-118, normal. The target holds 2^-118: compared unscaled
  // it is 2^-130, yet it is not a subnormal the target stored (GRAD_UNDERFLOW reads this count).
  const std::vector<float> g = {std::ldexp(1.0f, -130), 1.0f, 2.0f, 3.0f};
  const std::vector<float> t = {std::ldexp(1.0f, -118), 4096.0f, 8192.0f, 12288.0f};
  MetricOptions o;
  o.target_scale_log2 = 12;
  Result<PairMetrics> m = compare_tensors(f32_view(g), f32_view(t), o);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->target.subnormal_count, 0);
  EXPECT_EQ(m->golden.subnormal_count, 1);
  EXPECT_DOUBLE_EQ(m->rel_l2, 0.0);
}

// ---- run_compare on two in-memory runs ------------------------------------------------------------------

// A RecordSource over float tensors held in memory, with stored statistics on every record (as a capture
// writes them) and recorded op arguments.
class MemoryRun final : public RecordSource {
 public:
  explicit MemoryRun(bool with_data = true) : with_data_(with_data) {}
  std::string describe() const override { return "memory"; }
  const RecordList& records() const override { return records_; }
  const std::vector<Status>& problems() const override { return problems_; }
  Result<TensorView> load(const Record& r) const override {
    auto it = tensors_.find(r.handle);
    if (it == tensors_.end()) return Status::IOError(r.name + ": no data");
    return it->second;
  }
  std::string op_arguments_json(const Record& r) const override {
    auto it = args_.find(r.handle);
    return it == args_.end() ? "" : it->second;
  }

  Record& add(const std::string& name, const std::string& direction, const std::string& role,
              const std::vector<float>& values, int64_t step = 0) {
    const TensorView v = f32_view(values);
    Record r;
    r.name = name;
    r.file = "memory";
    r.dtype = DType::kF32;
    r.shape = values.size() == 1 ? Shape{} : Shape{static_cast<int64_t>(values.size())};
    r.module = name.substr(0, name.find('/'));
    r.direction = direction;
    r.role = role;
    r.index = 0;
    r.rank = 0;
    r.step = step;
    r.order = static_cast<int64_t>(records_.size());
    r.handle = records_.size();
    r.stats = compute_stats(v);
    r.has_data = with_data_;
    if (with_data_) tensors_[r.handle] = v;
    records_.push_back(r);
    return records_.back();
  }
  // A record of the loss-scaling op `<global>/mul#0`, with its recorded arguments when given.
  void add_mul(const std::string& rest, const std::string& direction, const std::string& role, float value,
               const std::string& args = "") {
    Record& r = add("<global>/mul#0/" + rest, direction, role, {value});
    r.op = "mul";
    r.module = "<global>";
    if (!args.empty()) args_[r.handle] = args;
  }

 private:
  bool with_data_;
  RecordList records_;
  std::vector<Status> problems_;
  std::map<uint64_t, TensorView> tensors_;
  std::map<uint64_t, std::string> args_;
};

// One step of a small model: a forward output, then backward rows from the loss down (module gradients
// in and out, a parameter gradient per layer). `grad_factor` multiplies every gradient; `layer_factor`
// the gradients of layer 1 only (a fault).
void add_step(MemoryRun& run, int64_t step, float grad_factor, bool noisy, float layer_factor = 1.0f) {
  auto values = [&](int n, float scale) {
    std::vector<float> v = wave(n, scale);
    return noisy ? jitter(v) : v;
  };
  run.add("<root>/forward/output/0", "forward", "output", values(64, 2.0f), step);
  run.add("<root>/backward/input/0", "backward", "input", times(values(1, 1.0f), grad_factor), step);
  for (int layer = 2; layer >= 0; --layer) {
    const std::string m = "layers." + std::to_string(layer);
    const float f = grad_factor * (layer == 1 ? layer_factor : 1.0f);
    run.add(m + "/backward/input/0", "backward", "input", times(values(64, 0.01f), f), step);
    run.add(m + "/backward/output/0", "backward", "output", times(values(64, 0.02f), f), step);
    run.add(m + "/backward/grad/weight", "backward", "grad", times(values(256, 0.003f), f), step);
  }
}

CompareOptions options() {
  CompareOptions o;
  o.thresholds = default_thresholds();
  o.jobs = 2;
  return o;
}

const CompareRow& row_named(const CompareResult& r, const std::string& name, int64_t step = 0) {
  for (const CompareRow& row : r.rows)
    if (row.golden->name == name && row.golden->step == step) return row;
  throw std::runtime_error("no row " + name);
}

TEST(LossScaleCompare, ScaledBackwardIsComparedUnscaledByTensors) {
  MemoryRun golden, target;
  add_step(golden, 0, 1.0f, false);
  add_step(target, 0, 4096.0f, true);
  add_step(golden, 1, 1.0f, false);
  add_step(target, 1, 2048.0f, true);  // GradScaler halved its scale after an overflow
  Result<CompareResult> r = run_compare(golden, target, options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->loss_scales.size(), 2u);
  EXPECT_EQ(r->loss_scales[0].step, 0);
  EXPECT_EQ(r->loss_scales[0].evidence.log2_ratio, 12);
  EXPECT_EQ(r->loss_scales[0].evidence.rows_at_ratio, 10);
  EXPECT_EQ(r->loss_scales[1].step, 1);
  EXPECT_EQ(r->loss_scales[1].evidence.log2_ratio, 11);
  EXPECT_EQ(r->summary.verdict, Verdict::kPass) << r->summary.fail;
  const CompareRow& grad = row_named(*r, "layers.1/backward/grad/weight", 1);
  EXPECT_EQ(grad.loss_scale_log2, 11);
  EXPECT_LT(grad.metrics->rel_l2, 1e-5);
  EXPECT_NEAR(grad.metrics->target.l2norm, grad.golden->stats->l2norm, 1e-5 * grad.golden->stats->l2norm);
  // Forward rows are never rescaled.
  EXPECT_EQ(row_named(*r, "<root>/forward/output/0").loss_scale_log2, 0);
  // The overflow analysis reads the values as stored: 2^11 times the golden's.
  const MeasuredSide stored = measured_records(*r, /*target_side=*/true);
  int seen = 0;
  for (const MeasuredRecord& m : stored.records) {
    if (m.record->name != grad.target->name || m.record->step != 1) continue;
    EXPECT_NEAR(m.stats->l2norm / grad.golden->stats->l2norm, 2048.0, 0.01);
    ++seen;
  }
  EXPECT_EQ(seen, 1);
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes.back().find("× 2^-12 (step 0, rank 0), × 2^-11 (step 1, rank 0)"), std::string::npos)
      << r->notes.back();
}

TEST(LossScaleCompare, ScaledBackwardIsComparedUnscaledByStatistics) {
  MemoryRun golden(false), target(false);
  add_step(golden, 0, 1.0f, false);
  add_step(target, 0, 4096.0f, true);
  Result<CompareResult> r = run_compare(golden, target, options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->loss_scales.size(), 1u);
  EXPECT_EQ(r->summary.verdict, Verdict::kPass);
  const CompareRow& grad = row_named(*r, "layers.2/backward/output/0");
  ASSERT_EQ(grad.mode, CompareMode::kStatistics);
  EXPECT_EQ(grad.loss_scale_log2, 12);
  EXPECT_NEAR(target_stats(grad).l2norm / golden_stats(grad).l2norm, 1.0, 1e-5);  // compared unscaled
  EXPECT_LT(std::fabs(stats_differences(grad).norm_rel), 1e-5);
  EXPECT_NEAR(grad.target->stats->l2norm / golden_stats(grad).l2norm, 4096.0, 0.1);  // the record as stored
}

TEST(LossScaleCompare, BothSidesScaledCompareAtTheirRatio) {
  // The golden scaled by 2^3, the target by 2^12: compared at 2^9.
  MemoryRun golden, target;
  add_step(golden, 0, 8.0f, false);
  add_step(target, 0, 4096.0f, true);
  Result<CompareResult> r = run_compare(golden, target, options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->loss_scales.size(), 1u);
  EXPECT_EQ(r->loss_scales[0].evidence.log2_ratio, 9);
  const CompareRow& grad = row_named(*r, "layers.0/backward/grad/weight");
  EXPECT_EQ(grad.loss_scale_log2, 9);
  EXPECT_LT(grad.metrics->rel_l2, 1e-5);
  EXPECT_EQ(r->summary.verdict, Verdict::kPass);
}

TEST(LossScaleCompare, AnOverflowingScaleStillErrs) {
  // A scale too high: one gradient holds Inf in the target. Inf × 2^-k is Inf, so the row stays an error,
  // while the other rows still show the scale.
  MemoryRun golden, target;
  add_step(golden, 0, 1.0f, false);
  add_step(target, 0, 4096.0f, true);
  for (const Record& rec : target.records())
    if (rec.name == "layers.0/backward/grad/weight") {
      TensorView v = *target.load(rec);
      reinterpret_cast<float*>(const_cast<std::byte*>(v.data))[3] = INFINITY;
    }
  Result<CompareResult> r = run_compare(golden, target, options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->loss_scales.size(), 1u);
  const CompareRow& grad = row_named(*r, "layers.0/backward/grad/weight");
  EXPECT_EQ(grad.loss_scale_log2, 12);
  EXPECT_EQ(grad.verdict, Verdict::kError);
  EXPECT_EQ(grad.metrics->target.pinf_count, 1);
}

TEST(LossScaleCompare, OneLayerHalvedIsNotAbsorbed) {
  MemoryRun golden, target;
  add_step(golden, 0, 1.0f, false);
  add_step(target, 0, 1.0f, true, /*layer_factor=*/0.5f);
  Result<CompareResult> r = run_compare(golden, target, options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->loss_scales.empty());
  EXPECT_EQ(row_named(*r, "layers.1/backward/grad/weight").loss_scale_log2, 0);
  // Compared as stored: half the golden (run_compare's fixed thresholds judge it; under the noise model,
  // compare_runs, rel L2 0.5 in fp32 is structural).
  const CompareRow& halved = row_named(*r, "layers.1/backward/grad/weight");
  EXPECT_NEAR(halved.metrics->rel_l2, 0.5, 1e-3);
  EXPECT_NE(halved.verdict, Verdict::kPass);
  EXPECT_NE(r->summary.verdict, Verdict::kPass);
}

TEST(LossScaleCompare, RecordedScalingOpCorroboratesAndIsNoMissingRecord) {
  // The target scales its loss outside the model (`(loss * 4096).backward()` under an op-level capture);
  // the golden does not: the target's `<global>/mul#0` records have no partner.
  MemoryRun golden, target;
  add_step(golden, 0, 1.0f, false);
  target.add_mul("forward/input/0", "forward", "input", 2.5f);
  target.add_mul("forward/output/0", "forward", "output", 2.5f * 4096, R"({"args": ["<tensor f32 []>", 4096.0], "kwargs": {}})");
  add_step(target, 0, 4096.0f, true);
  Result<CompareResult> r = run_compare(golden, target, options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->loss_scales.size(), 1u);
  const LossScale& s = r->loss_scales[0];
  ASSERT_TRUE(s.target_op);
  EXPECT_EQ(s.target_op->event, "<global>/mul#0");
  EXPECT_EQ(s.target_op->factor, 4096.0);
  EXPECT_FALSE(s.golden_op);
  EXPECT_EQ(r->summary.unmatched_target, 2);
  EXPECT_EQ(r->summary.unmatched_implementation, 2);  // how the target scales its loss, not a missing record
  EXPECT_EQ(r->summary.verdict, Verdict::kPass);
}

TEST(LossScaleCompare, ScalingOpRowsOnBothSides) {
  // Both sides multiply the loss, the golden by 1, the target by 4096: the product is compared at their
  // ratio, the gradient arriving at it (1 on both sides) as stored, the one it passes on unscaled.
  MemoryRun golden, target;
  for (auto [run, f] : {std::pair{&golden, 1.0f}, std::pair{&target, 4096.0f}}) {
    run->add_mul("forward/output/0", "forward", "output", 2.5f * f,
                 f == 1.0f ? R"({"args": ["<tensor f32 []>", 1.0]})" : R"({"args": ["<tensor f32 []>", 4096]})");
    run->add_mul("backward/input/0", "backward", "input", 1.0f);  // arriving at the product
    run->add_mul("backward/output/0", "backward", "output", f);    // passed on to the loss
    add_step(*run, 0, f, run == &target);
  }
  Result<CompareResult> r = run_compare(golden, target, options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->loss_scales.size(), 1u);
  EXPECT_EQ(r->loss_scales[0].golden_op->factor, 1.0);
  EXPECT_EQ(row_named(*r, "<global>/mul#0/forward/output/0").loss_scale_log2, 12);
  EXPECT_EQ(row_named(*r, "<global>/mul#0/backward/input/0").loss_scale_log2, 0);
  EXPECT_EQ(row_named(*r, "<global>/mul#0/backward/output/0").loss_scale_log2, 12);
  EXPECT_EQ(r->summary.verdict, Verdict::kPass);
}

// ---- the finding ----------------------------------------------------------------------------------------

const Diagnosis* diagnosis(const Findings& f, const std::string& code) {
  for (const Diagnosis& d : f.diagnoses)
    if (d.code == code) return &d;
  return nullptr;
}

TEST(LossScaleDiagnosis, SaidAsInformationNeverAsACause) {
  MemoryRun golden, target;
  add_step(golden, 0, 1.0f, false);
  target.add_mul("forward/output/0", "forward", "output", 2.5f * 4096, R"({"args": ["<tensor f32 []>", 4096.0]})");
  add_step(target, 0, 4096.0f, true);
  Result<CompareResult> r = run_compare(golden, target, options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Findings f = analyse_and_diagnose(*r, &golden, &target);
  const Diagnosis* d = diagnosis(f, "LOSS_SCALE");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->strength, 0);  // no action needed: never a cause
  std::string text;
  for (const std::string& line : d->evidence) text += line + "\n";
  EXPECT_NE(text.find("target gradients × 4096 = 2^12 (step 0, rank 0), compared after unscaling; evidence: 10 of "
                      "10 backward rows at ratio 2^12 ± "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("scaling op `<global>/mul#0` argument 4096 in the target"), std::string::npos) << text;
  ASSERT_FALSE(d->events.empty());
  EXPECT_EQ(d->events[0], "<global>/mul#0");
  EXPECT_EQ(diagnosis(f, "GRAD_OVERFLOW"), nullptr);
  EXPECT_EQ(diagnosis(f, "GRAD_UNDERFLOW"), nullptr);
}

TEST(LossScaleDiagnosis, SilentWithoutAScale) {
  MemoryRun golden, target;
  add_step(golden, 0, 1.0f, false);
  add_step(target, 0, 1.0f, true, /*layer_factor=*/0.5f);
  Result<CompareResult> r = run_compare(golden, target, options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(diagnosis(analyse_and_diagnose(*r, &golden, &target), "LOSS_SCALE"), nullptr);
}

}  // namespace
}  // namespace parity
