// Analysis on synthetic compare results shaped like parity capture dumps: noise classes with ambient
// precision, first divergence, sources vs carriers (the injected op ranks first even when the first
// failing row is downstream), differing inputs and parameters, NaN born at an op.
#include <gtest/gtest.h>

#include <set>

#include <cmath>

#include "analysis/synth.h"
#include "parity/analysis.h"

namespace parity {
namespace {

using test::Synth;

// fp32 vs fp32: layers.0.attn_norm creates 2e-3 relative error (far beyond fp32 rounding, still passing
// the fixed thresholds); it is carried downstream and the first *failing* row is the head output.
Synth fp32_source_upstream_of_first_failure() {
  Synth s;
  s.row("<root>", "Llama", "forward", "input", 0, 0, DType::kI64, DType::kI64);
  s.module("embed", "Embedding", 0, 0, DType::kF32, /*param=*/0);
  s.row("layers.0", "LlamaBlock", "forward", "input", 0, 0);
  s.module("layers.0.attn_norm", "RMSNorm", 0, 2e-3, DType::kF32, 0);
  s.module("layers.0.attn", "Attention", 2e-3, 3e-3);
  s.row("layers.0", "LlamaBlock", "forward", "output", 0, 3e-3);
  s.module("layers.1", "LlamaBlock", 3e-3, 4e-3);
  s.module("head", "Linear", 4e-3, 2e-2, DType::kF32, 0);
  s.row("<root>", "Llama", "forward", "output", 0, 2e-2);
  return s;
}

// Issue 10: a golden all-zero output against a non-zero target is an unbounded relative error, but no
// NaN/Inf exists anywhere: the suspect must say what it is, never "NaN/Inf born here".
TEST(Analysis, NoNanInfBornWithoutANonFiniteValue) {
  Synth s;
  s.row("l0", "Linear", "forward", "input", 0, 0);
  CompareRow& out = s.row("l0", "Linear", "forward", "output", 0, 0);
  out.metrics->rel_l2 = kNaN;      // ‖g‖ = 0
  out.metrics->euclidean = 2.0;    // the target is not zero
  out.metrics->golden.l2norm = 0;
  Analysis a = analyse(s.result);
  ASSERT_FALSE(a.suspects.empty());
  EXPECT_EQ(a.suspects[0].name, "l0/forward");
  EXPECT_EQ(a.suspects[0].why.find("NaN/Inf"), std::string::npos) << a.suspects[0].why;
  EXPECT_NE(a.suspects[0].why.find("all zero"), std::string::npos) << a.suspects[0].why;

  Synth n;  // a real NaN born in the output is still called so
  n.row("l0", "Linear", "forward", "input", 0, 0);
  n.row("l0", "Linear", "forward", "output", 0, 0, DType::kF32, DType::kF32, 0, 0, /*nan_t=*/3);
  Analysis b = analyse(n.result);
  ASSERT_FALSE(b.suspects.empty());
  EXPECT_NE(b.suspects[0].why.find("NaN/Inf born here"), std::string::npos) << b.suspects[0].why;
}

TEST(Analysis, SourceRanksFirstEvenWhenTheFirstFailureIsDownstream) {
  Synth s = fp32_source_upstream_of_first_failure();
  Analysis a = analyse(s.result);
  ASSERT_TRUE(a.first_divergence.has_value());
  EXPECT_EQ(a.first_divergence->module, "head");
  ASSERT_FALSE(a.suspects.empty());
  EXPECT_EQ(a.suspects[0].name, "layers.0.attn_norm/forward");
  EXPECT_EQ(a.suspects[0].kind, SuspectKind::kSource);
  EXPECT_GT(a.suspects[0].score, 10);  // 2e-3 / (2^-24 · sqrt(7)) ≈ 1.3e4 ≈ 2^13.7
  // The enclosing block and the root create the same error: explained by the norm, not listed.
  for (const Suspect& sp : a.suspects) {
    EXPECT_NE(sp.name, "layers.0/forward");
    EXPECT_NE(sp.name, "<root>/forward");
  }
  // Downstream events only carry it.
  for (const EventError& e : a.events) {
    if (e.name == "layers.0.attn/forward" || e.name == "layers.1/forward" || e.name == "head/forward") {
      EXPECT_EQ(e.role, EventRole::kCarrier) << e.name;
    }
    if (e.name == "layers.0/forward") {
      EXPECT_EQ(e.explained_by, "layers.0.attn_norm/forward");
    }
  }
}

TEST(Analysis, AmbientBf16NoiseDoesNotHideTheInjectedNorm) {
  // Target in bf16 everywhere (rounding noise of a few 1e-3 on every tensor); one norm without upcast.
  const DType b = DType::kBF16;
  Synth s;
  s.row("<root>", "Llama", "forward", "input", 0, 0, DType::kI64, DType::kI64);
  s.module("embed", "Embedding", 0, 1.5e-3, b, 1.5e-3);
  for (int layer = 0; layer < 4; ++layer) {
    const std::string p = "layers." + std::to_string(layer);
    const double in = layer <= 2 ? 3e-3 : 0.4;
    s.row(p, "LlamaBlock", "forward", "input", 0, in, DType::kF32, b);
    s.module(p + ".attn_norm", "RMSNorm", in, layer == 2 ? 0.45 : in * 1.3, b, 1e-3);
    s.module(p + ".attn", "Attention", layer == 2 ? 0.45 : in, layer < 2 ? 6e-3 : 0.45, b);
    s.module(p + ".mlp", "SwiGLU", layer < 2 ? 6e-3 : 0.45, layer < 2 ? 8e-3 : 0.5, b);
    s.row(p, "LlamaBlock", "forward", "output", 0, layer < 2 ? 4e-3 : 0.4, DType::kF32, b);
  }
  Analysis a = analyse(s.result);
  ASSERT_FALSE(a.suspects.empty());
  EXPECT_EQ(a.suspects[0].module, "layers.2.attn_norm");
  // Rows before the fault are noise-level in bf16 units.
  for (const CompareRow& row : s.result.rows) {
    if (row.golden->module.rfind("layers.0", 0) == 0) {
      EXPECT_NE(row.noise, NoiseClass::kStructural) << row.golden->name;
    }
    if (row.golden->name == "layers.2.attn_norm/forward/output/0") {
      EXPECT_EQ(row.noise, NoiseClass::kStructural);
    }
  }
  EXPECT_EQ(a.suspects.size(), 1u) << a.suspects.back().name;
}

TEST(Analysis, AmbientPrecisionCarriesIntoFp32Islands) {
  // A bf16 run whose norm computes and stores fp32: its output carries bf16 noise, not fp32 noise.
  Synth s;
  s.module("embed", "Embedding", 0, 1e-3, DType::kBF16);
  s.module("norm", "RMSNorm", 1e-3, 1.2e-3, DType::kF32);
  classify_rows(s.result);
  EXPECT_EQ(s.result.rows.back().noise, NoiseClass::kNoise);
  Synth plain;  // without the bf16 history the same error is structural in fp32 units
  plain.module("norm", "RMSNorm", 0, 1.2e-3, DType::kF32);
  classify_rows(plain.result);
  EXPECT_EQ(plain.result.rows.back().noise, NoiseClass::kStructural);
}

// The rows' own events and the precision each run declares set the ambient roundoff, not the rows that came
// earlier: one f16 op of an fp32 run made every later row an f16 row (issue 28, the fp16 softmax fault).
TEST(Analysis, OneF16OpDoesNotMakeLaterRowsF16) {
  Synth s;
  s.result.golden_fingerprint = s.result.target_fingerprint = R"({"model": {"parameter_dtypes": {"float32": 100}}})";
  s.module("attn", "softmax", 0, 3e-4, DType::kF16);  // the target's softmax in f16: noise in f16 units
  s.module("proj", "Linear", 3e-4, 3e-4, DType::kF32);
  classify_rows(s.result);
  EXPECT_EQ(s.result.rows[1].noise, NoiseClass::kNoise) << s.result.rows[1].golden->name;
  EXPECT_EQ(s.result.rows[3].noise, NoiseClass::kStructural) << s.result.rows[3].golden->name;
}

TEST(Analysis, DeclaredPrecisionCarriesIntoFp32Islands) {
  // The target declares bf16 parameters: its fp32 islands carry bf16 noise from the first row on.
  Synth s;
  s.result.golden_fingerprint = R"({"model": {"parameter_dtypes": {"float32": 100}}})";
  s.result.target_fingerprint = R"({"model": {"parameter_dtypes": {"bfloat16": 100}}})";
  s.module("norm", "RMSNorm", 0, 3e-3, DType::kF32);
  classify_rows(s.result);
  EXPECT_EQ(s.result.rows.back().noise, NoiseClass::kNoise);
  // Autocast from step 1 on: step 0 is judged in fp32 units, step 1 in bf16 units.
  Synth a;
  a.result.golden_fingerprint = R"({"model": {"parameter_dtypes": {"float32": 100}}})";
  a.result.target_fingerprint =
      R"({"model": {"parameter_dtypes": {"float32": 100}}, "precision_by_step": {"autocast": {"0": "off", "1": "cpu:bfloat16"}}})";
  a.module("norm", "RMSNorm", 0, 3e-3, DType::kF32, -1, /*step=*/0);
  a.module("norm", "RMSNorm", 0, 3e-3, DType::kF32, -1, /*step=*/1);
  classify_rows(a.result);
  EXPECT_EQ(a.result.rows[1].noise, NoiseClass::kStructural);
  EXPECT_EQ(a.result.rows[3].noise, NoiseClass::kNoise);
}

// The shape of an error (parity/noise.h ErrorShape): a difference along g far beyond what rounding puts there
// is structural although its size is within a reduction's allowance; the same size spread isotropically is not.
// A bf16 norm output of 4 × 512 elements, |g| ≤ 1, ‖g‖ = 45 (n_eff = min(45², 512) = 512), rel L2 0.04:
// 3.24 u by size for a 512-long reduction (expected 2^-8·sqrt(10) = 0.0123).
// A row of that norm whose difference (rel L2 `rel`) has `along_fraction` of its norm along g.
void shape_row(Synth& s, const std::string& role, double along_fraction, double rel, int64_t last_dim) {
  CompareRow& r = s.row("norm", "RMSNorm", "forward", role, 0, rel, DType::kBF16, DType::kBF16);
  s.last_golden().shape = s.last_target().shape = {2048 / last_dim, last_dim};
  PairMetrics& m = *r.metrics;
  m.numel = m.compared = 2048;
  m.golden.absmax = 1;
  const double g = 45, d = rel * 45, dg = along_fraction * d * g;  // ⟨d,g⟩ = f·‖d‖‖g‖
  m.golden.l2norm = g;
  m.euclidean = d;
  m.target.l2norm = std::sqrt(g * g + 2 * dg + d * d);
}

// The norm's output row, classified; with `input_along` ≥ 0, after an input row whose difference (rel L2
// 0.05) has that fraction along g.
CompareRow shaped_row(double along_fraction, int64_t last_dim, Synth& s, double input_along = -1) {
  s.result.golden_fingerprint = s.result.target_fingerprint = R"({"model": {"parameter_dtypes": {"bfloat16": 100}}})";
  if (input_along >= 0) shape_row(s, "input", input_along, 0.05, last_dim);
  shape_row(s, "output", along_fraction, 0.04, last_dim);
  classify_rows(s.result);
  return s.result.rows.back();
}

TEST(Analysis, AScaleErrorIsStructuralWithinTheSizeAllowance) {
  Synth a, b, c;
  const CompareRow isotropic = shaped_row(0.05, 512, a);  // z = 0.05·sqrt(512) = 1.1: rounding's shape
  EXPECT_FALSE(isotropic.error_structured);
  EXPECT_EQ(isotropic.noise, NoiseClass::kNoise);
  const CompareRow along = shaped_row(0.96, 512, b);  // z = 21.7; part along g 0.0384 ≥ 2 × 0.0123
  EXPECT_TRUE(along.error_structured);
  EXPECT_EQ(along.noise, NoiseClass::kStructural);
  EXPECT_NEAR(along.noise_ratio, 0.04 / (0x1p-8 * std::sqrt(10.0)) * 0.96 * std::sqrt(512.0), 1e-6);
  const ErrorShape shape = error_shape(*along.metrics, 512);
  EXPECT_NEAR(shape.along, 0.96, 1e-9);
  EXPECT_NEAR(shape.along_rel, 0.96 * 0.04, 1e-9);
  // The same fraction over 16-wide rows: rows of a batch share a weight's rounding, so n_eff is at most the
  // last dimension and z = 0.96·4 = 3.8 is not evidence.
  const CompareRow narrow = shaped_row(0.96, 16, c);
  EXPECT_FALSE(narrow.error_structured);
}

// Structure is judged where it is made: an output whose input is already aligned with g about as strongly
// (z_in ≥ z / 2) inherits it (bf16 gradients squared into Adam's exp_avg_sq); the input row itself, what the
// event consumes, has no shape of its own; an output made structured from an isotropic input still is.
TEST(Analysis, StructureIsJudgedWhereItIsMade) {
  Synth inherited, made;
  const CompareRow out = shaped_row(0.96, 512, inherited, /*input_along=*/0.6);  // z_in = 13.6 ≥ 21.7 / 2
  EXPECT_FALSE(out.error_structured);
  EXPECT_FALSE(inherited.result.rows.front().error_structured);  // the input row (z 13.6, 0.03 of its norm along g)
  EXPECT_TRUE(shaped_row(0.96, 512, made, /*input_along=*/0.05).error_structured);  // z_in = 1.1
}

TEST(Analysis, FirstDivergenceIsForwardBeforeBackward) {
  Synth s;
  s.row("layers.0", "Block", "backward", "output", 0, 0.5);  // fails, listed first
  s.last_golden().order = 50;
  s.row("layers.0", "Block", "forward", "input", 0, 0);
  s.row("layers.0", "Block", "forward", "output", 0, 0.5);
  auto f = first_divergence(s.result);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->direction, "forward");
  EXPECT_EQ(f->name, "layers.0/forward/output/0");
  Synth clean;
  clean.module("a", "Linear", 0, 1e-7);
  EXPECT_FALSE(first_divergence(clean.result).has_value());
}

TEST(Analysis, DifferingInputsAreTheirOwnSuspect) {
  Synth s;
  s.row("<root>", "Llama", "forward", "input", 0, 0.9, DType::kI64, DType::kI64);
  s.module("embed", "Embedding", 0.9, 1.2, DType::kF32, 0);
  s.row("<root>", "Llama", "forward", "output", 0, 1.1);
  Analysis a = analyse(s.result);
  ASSERT_FALSE(a.suspects.empty());
  EXPECT_EQ(a.suspects[0].kind, SuspectKind::kInputs);
  EXPECT_EQ(a.suspects[0].module, "<root>");
  EXPECT_TRUE(std::isinf(a.suspects[0].input_ratio));  // integer ids: exact, any difference is infinite
}

TEST(Analysis, DifferingParametersAreTheirOwnSuspect) {
  Synth s;
  s.row("<root>", "Llama", "forward", "input", 0, 0, DType::kI64, DType::kI64);
  s.module("embed", "Embedding", 0, 1.4, DType::kF32, /*param=*/1.4);
  s.module("head", "Linear", 1.4, 1.5, DType::kF32, /*param=*/1.4);
  Analysis a = analyse(s.result);
  ASSERT_GE(a.suspects.size(), 2u);
  EXPECT_EQ(a.suspects[0].kind, SuspectKind::kParameters);
  EXPECT_EQ(a.suspects[0].module, "embed");
  for (const EventError& e : a.events) EXPECT_NE(e.role, EventRole::kSource) << e.name;
}

TEST(Analysis, NanBornAtAnOpIsTheTopSuspect) {
  Synth s;
  s.row("layers.0.attn", "Attention", "forward", "input", 0, 0);
  s.row("layers.0.attn", "matmul", "forward", "input", 0, 0);
  s.row("layers.0.attn", "matmul", "forward", "output", 0, 0);
  s.row("layers.0.attn", "softmax", "forward", "input", 0, 0);
  s.row("layers.0.attn", "softmax", "forward", "output", 0, 0, DType::kF32, DType::kF32, 0, 0, /*nan_t=*/12);
  s.row("layers.0.attn", "Attention", "forward", "output", 0, 0, DType::kF32, DType::kF32, 0, 0, 40);
  s.module("layers.0.mlp", "MLP", 0, 0);
  s.result.rows[s.result.rows.size() - 2].metrics->target.nan_count = 40;
  s.result.rows[s.result.rows.size() - 2].metrics->nonfinite_mismatch = 40;
  s.result.rows[s.result.rows.size() - 2].metrics->nonfinite_agree = false;
  s.result.rows[s.result.rows.size() - 1].metrics->target.nan_count = 40;
  s.result.rows[s.result.rows.size() - 1].metrics->nonfinite_mismatch = 40;
  s.result.rows[s.result.rows.size() - 1].metrics->nonfinite_agree = false;
  Analysis a = analyse(s.result);
  ASSERT_FALSE(a.suspects.empty());
  EXPECT_EQ(a.suspects[0].name, "layers.0.attn/softmax#0/forward");
  EXPECT_TRUE(std::isinf(a.suspects[0].score));
  EXPECT_EQ(a.suspects.size(), 1u);  // attention explained by its softmax; the MLP carries NaN
}

TEST(Analysis, PlainTensorFilesGetClassesButNoEvents) {
  CompareResult r;
  Record golden, target;
  golden.name = target.name = "a.npy";
  golden.dtype = DType::kF32;
  target.dtype = DType::kBF16;
  CompareRow row;
  row.golden = &golden;
  row.target = &target;
  row.mode = CompareMode::kTensor;
  PairMetrics m;
  m.rel_l2 = 1e-3;
  m.compared = 8;
  row.metrics = m;
  row.verdict = Verdict::kPass;
  r.rows.push_back(row);
  Analysis a = analyse(r);
  EXPECT_FALSE(a.has_events);
  EXPECT_EQ(r.rows[0].noise, NoiseClass::kNoise);
  EXPECT_TRUE(a.suspects.empty());
}

TEST(Analysis, EventNamesStripRoleAndIndex) {
  Record r;
  r.name = "layers.0.attn/softmax#0/forward/output/0";
  r.role = "output";
  EXPECT_EQ(event_name(r), "layers.0.attn/softmax#0/forward");
  r.name = "layers.0.attn.wq/forward/parameter/weight";
  r.role = "parameter";
  EXPECT_EQ(event_name(r), "layers.0.attn.wq/forward");
  r.name = "Functional.softmax.0.forward.input.0";
  r.role = "input";
  EXPECT_EQ(event_name(r), "Functional.softmax.0.forward");
  r.name = "layers.0.input_layernorm/forward/input/0";
  EXPECT_EQ(event_name(r), "layers.0.input_layernorm/forward");
}

// Rows listed with ranks and steps interleaved (as a merged multi-rank listing can be): each event
// gathers the rows of its own rank and step, and events come stream by stream in execution order.
TEST(Analysis, EventsOfInterleavedRanksAndStepsKeepTheirOwnRows) {
  test::Synth f;
  for (int64_t step : {0, 1})
    for (int rank : {1, 0}) {
      f.module("l0", "Linear", 0, 1e-7, DType::kF32, -1, step, rank);
      f.module("l1", "Linear", 1e-7, rank == 1 && step == 1 ? 0.5 : 1e-7, DType::kF32, -1, step, rank);
    }
  Analysis a = analyse(f.result);
  ASSERT_EQ(a.events.size(), 8u);
  size_t k = 0;
  for (int rank : {0, 1})
    for (int64_t step : {0, 1})
      for (const char* name : {"l0/forward", "l1/forward"}) {
        const EventError& e = a.events[k++];
        EXPECT_EQ(e.name, name);
        EXPECT_EQ(e.rank, rank);
        EXPECT_EQ(e.step, step);
        ASSERT_EQ(e.rows.size(), 2u) << e.name << " rank " << rank << " step " << step;
        for (size_t i : e.rows) {
          EXPECT_EQ(f.result.rows[i].golden->rank, rank);
          EXPECT_EQ(f.result.rows[i].golden->step, step);
        }
      }
  ASSERT_FALSE(a.suspects.empty());
  EXPECT_EQ(a.suspects[0].name, "l1/forward");
  EXPECT_EQ(a.suspects[0].rank, 1);
  EXPECT_EQ(a.suspects[0].step, 1);
}

// After the diagnoses only the suspects' events are kept, and each suspect still names its own event.
TEST(Analysis, KeepSuspectEventsRenumbersTheSuspects) {
  test::Synth f;
  f.module("l0", "Linear", 0, 1e-7);
  f.module("l1", "Linear", 1e-7, 0.5);
  f.module("l2", "Linear", 0.5, 0.5);
  f.module("l3", "Linear", 0.5, 40.0);
  Analysis a = analyse(f.result);
  ASSERT_EQ(a.events.size(), 4u);
  ASSERT_GE(a.suspects.size(), 2u);
  std::vector<std::string> named;
  for (const Suspect& s : a.suspects) named.push_back(std::string(a.events[s.event].name));
  keep_suspect_events(a);
  std::set<size_t> distinct;
  for (size_t k = 0; k < a.suspects.size(); ++k) {
    ASSERT_LT(a.suspects[k].event, a.events.size());
    EXPECT_EQ(a.events[a.suspects[k].event].name, named[k]);
    EXPECT_EQ(a.events[a.suspects[k].event].name, a.suspects[k].name);
    distinct.insert(a.suspects[k].event);
  }
  EXPECT_EQ(a.events.size(), distinct.size());  // nothing but the suspects' events
  EXPECT_LT(a.events.size(), 4u);
}

TEST(Analysis, OpKinds) {
  EXPECT_TRUE(is_sensitive_op("LlamaRMSNorm"));
  EXPECT_TRUE(is_sensitive_op("LayerNorm"));
  EXPECT_TRUE(is_sensitive_op("softmax"));
  EXPECT_TRUE(is_sensitive_op("log_softmax"));
  EXPECT_TRUE(is_sensitive_op("exp"));
  EXPECT_FALSE(is_sensitive_op("expand"));
  EXPECT_FALSE(is_sensitive_op("Linear"));
  EXPECT_FALSE(is_sensitive_op("logits"));
  EXPECT_TRUE(is_random_op("dropout"));
  EXPECT_TRUE(is_random_op("Dropout"));
  EXPECT_FALSE(is_random_op("RMSNorm"));
  EXPECT_FALSE(is_random_op("operand"));
}

}  // namespace
}  // namespace parity

namespace parity {
namespace {

TEST(Analysis, CancellationFloorInBackwardOnly) {
  // A key-bias gradient: zero in exact arithmetic, both runs hold residue ~1e-10 that differs by 100 %.
  test::Synth s;
  CompareRow& in = s.row("k", "Linear", "backward", "input", 0, 1e-7);
  in.metrics->golden.l2norm = 1e-3 * 16;  // RMS 1e-3 over 256 elements
  CompareRow& g = s.row("k", "Linear", "backward", "grad", 0, 1.0);
  g.metrics->golden.l2norm = 1e-10 * 16;
  g.metrics->euclidean = 1e-10 * 16;
  classify_rows(s.result);
  EXPECT_EQ(s.result.rows[1].noise, NoiseClass::kNoise) << s.result.rows[1].noise_ratio;
  // The same shapes in forward (a normalisation shrinking its input) keep plain relative error.
  test::Synth f;
  CompareRow& fin = f.row("n", "RMSNorm", "forward", "input", 0, 0);
  fin.metrics->golden.l2norm = 1e3 * 16;
  CompareRow& fout = f.row("n", "RMSNorm", "forward", "output", 0, 1.0);
  fout.metrics->golden.l2norm = 1e-3 * 16;
  classify_rows(f.result);
  EXPECT_EQ(f.result.rows[1].noise, NoiseClass::kStructural);
}

}  // namespace
}  // namespace parity

namespace parity {
namespace {

// Issue 28 §7: an op that creates elevated error (4 < r ≤ 32) from identical inputs is a source, although
// it amplifies by less than source_amplification (8); one that receives a few roundings and adds as
// many is still a carrier.
TEST(Analysis, ElevatedErrorFromIdenticalInputsIsASource) {
  const double u = std::ldexp(1.0, -24);  // fp32; an activation is elementwise: expected = u
  test::Synth s;
  s.module("layers.0.mlp.act", "SiLU", 0, 6 * u);
  s.module("layers.0.mlp.down", "Linear", 6 * u, 7 * u * std::sqrt(1.0 + 6));  // n = 64: 7 u from 6 u
  s.module("layers.1.mlp.act", "SiLU", 3 * u, 6 * u);  // 2× from 3 u: carried, not created
  Analysis a = analyse(s.result);
  ASSERT_EQ(a.suspects.size(), 1u);
  EXPECT_EQ(a.suspects[0].name, "layers.0.mlp.act/forward");
  EXPECT_EQ(a.suspects[0].kind, SuspectKind::kSource);
  EXPECT_NEAR(a.suspects[0].score, std::log2(6.0), 0.1);
}

// A router's top-k whose float scores already differ beyond noise (an injected norm upstream) picks other
// experts as a consequence: its indices differ "beyond any unit", yet the decision creates no error of its
// own and must not outrank the norm that did (docs/judgement.md "Decision flips"). With scores that agree
// within rounding the same differing indices are a decision flip, as before.
Synth router_downstream_of(double score_rel) {
  Synth s;
  s.module("layers.0.norm", "RMSNorm", 0, score_rel);
  s.row("layers.0.mlp.gate", "topk", "forward", "input", 0, score_rel);
  s.row("layers.0.mlp.gate", "topk", "forward", "output", 0, score_rel);
  s.row("layers.0.mlp.gate", "topk", "forward", "output", 1, 0.3, DType::kI64, DType::kI64);
  s.module("layers.0.mlp.experts", "Experts", score_rel, 0.3);
  return s;
}

TEST(Analysis, ADecisionFromDifferingScoresDoesNotOutrankTheirSource) {
  Synth s = router_downstream_of(2e-3);
  Analysis a = analyse(s.result);
  ASSERT_FALSE(a.suspects.empty());
  EXPECT_EQ(a.suspects[0].name, "layers.0.norm/forward") << a.suspects[0].why;
  for (const Suspect& sp : a.suspects) EXPECT_NE(sp.name, "layers.0.mlp.gate/topk#0/forward") << sp.why;
  for (const EventError& e : a.events)
    if (e.name == "layers.0.mlp.gate/topk#0/forward") EXPECT_NE(e.role, EventRole::kSource);

  Synth tie = router_downstream_of(0);  // scores equal within rounding: a tie broken the other way
  analyse(tie.result);
  bool flip_seen = false;
  for (const CompareRow& row : tie.result.rows)
    if (row.golden->name == "layers.0.mlp.gate/topk#0/forward/output/1") {
      flip_seen = true;
      EXPECT_EQ(row.flip, FlipRole::kDecision);
      EXPECT_EQ(row.noise, NoiseClass::kElevated);
    }
  EXPECT_TRUE(flip_seen);
}

}  // namespace
}  // namespace parity
