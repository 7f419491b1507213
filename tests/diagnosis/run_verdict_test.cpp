// One answer per run (issue 28 §6): the run verdict is the rows' verdict raised by the diagnoses'
// severities (decide_run_verdict), the exit code follows it (gate_exit_code), a failing run always
// names a cause or says NO_CAUSE_FOUND, and an op present in one run only is named (STRUCTURE_DIFF).
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/synth.h"
#include "parity/diagnosis.h"
#include "parity/exit_codes.h"

namespace parity {
namespace {

using test::Synth;

Diagnosis finding(const std::string& code, Severity severity) {
  Diagnosis d;
  d.code = code;
  d.title = code + " title";
  d.severity = severity;
  return d;
}

const Diagnosis* find(const Findings& f, const std::string& code) {
  for (const Diagnosis& d : f.diagnoses)
    if (d.code == code) return &d;
  return nullptr;
}

TEST(RunVerdict, InformationalFindingsNeverChangeTheVerdict) {
  const std::vector<Diagnosis> info = {finding("CONFIG_DIFF", Severity::kInfo),
                                       finding("ACCUMULATION_NOISE", Severity::kInfo)};
  for (Verdict rows : {Verdict::kPass, Verdict::kWarn, Verdict::kFail, Verdict::kError}) {
    const RunVerdict run = decide_run_verdict(rows, info);
    EXPECT_EQ(run.verdict, rows);
    EXPECT_EQ(run.raised_by, "");
  }
}

TEST(RunVerdict, AFindingThatSaysTheRunIsBrokenFailsIt) {
  const RunVerdict run = decide_run_verdict(Verdict::kWarn, {finding("CONFIG_DIFF", Severity::kInfo),
                                                             finding("OVERFLOW", Severity::kFail)});
  EXPECT_EQ(run.verdict, Verdict::kFail);
  EXPECT_EQ(run.raised_by, "OVERFLOW: OVERFLOW title (the rows alone: warn)");
  EXPECT_EQ(gate_exit_code(run.verdict, WarnGate::kShown), kExitDifferences);
}

TEST(RunVerdict, ACauseWarnsAPassingRunAndNeverLowersAVerdict) {
  EXPECT_EQ(decide_run_verdict(Verdict::kPass, {finding("STRUCTURE_DIFF", Severity::kWarn)}).verdict, Verdict::kWarn);
  EXPECT_EQ(decide_run_verdict(Verdict::kFail, {finding("STRUCTURE_DIFF", Severity::kWarn)}).verdict, Verdict::kFail);
  EXPECT_EQ(decide_run_verdict(Verdict::kError, {finding("OVERFLOW", Severity::kFail)}).verdict, Verdict::kError);
}

TEST(RunVerdict, ExitCodeFollowsTheVerdict) {
  EXPECT_EQ(gate_exit_code(Verdict::kPass, WarnGate::kShown), kExitOk);
  EXPECT_EQ(gate_exit_code(Verdict::kWarn, WarnGate::kShown), kExitOk);
  EXPECT_EQ(gate_exit_code(Verdict::kWarn, WarnGate::kFails), kExitDifferences);
  EXPECT_EQ(gate_exit_code(Verdict::kFail, WarnGate::kShown), kExitDifferences);
  EXPECT_EQ(gate_exit_code(Verdict::kError, WarnGate::kShown), kExitDifferences);
  EXPECT_EQ(gate_exit_code(Verdict::kPass, WarnGate::kFails), kExitOk);
  // nothing usable to judge is no answer, whatever the verdict says
  EXPECT_EQ(gate_exit_code(Verdict::kPass, WarnGate::kShown, /*no_input=*/true), kExitUsage);
  EXPECT_EQ(gate_exit_code(Verdict::kFail, WarnGate::kFails, /*no_input=*/true), kExitUsage);
}

// A target-only op turns finite inputs into Inf while every compared row agrees: the rows pass, the
// OVERFLOW finding says the run is broken, and the run fails.
TEST(RunVerdict, OverflowOnAnUncomparedOpFailsARunWhoseRowsPass) {
  Synth s;
  s.row("l0.attn", "Attention", "forward", "input", 0, 0);
  s.row("l0.attn", "Attention", "forward", "output", 0, 1e-8);
  s.last_golden().order = s.last_target().order = 10;
  for (const char* role : {"input", "output"}) {
    Record r;
    r.name = std::string("l0.attn/half#0/forward/") + role + "/0";
    r.module = "l0.attn";
    r.op = "half";
    r.direction = "forward";
    r.role = role;
    r.step = r.rank = 0;
    r.order = role[0] == 'i' ? 5 : 6;
    TensorStats st;
    st.numel = 64;
    st.min = -3.4e38;
    st.max = 0.1;
    st.absmax = 3.4e38;
    if (role[0] == 'o') st.inf_count = 7;
    r.stats = st;
    s.result.unmatched_target.push_back(r);
  }
  s.result.summary = summarize_compare(s.result);
  ASSERT_EQ(s.result.summary.verdict, Verdict::kPass);  // an op inside a compared module: an implementation detail
  Findings f = analyse_and_diagnose(s.result, nullptr, nullptr);
  const Diagnosis* overflow = find(f, "OVERFLOW");
  ASSERT_NE(overflow, nullptr);
  EXPECT_EQ(overflow->severity, Severity::kFail);
  EXPECT_EQ(decide_run_verdict(s.result.summary.verdict, f.diagnoses).verdict, Verdict::kFail);
  EXPECT_EQ(find(f, "NO_CAUSE_FOUND"), nullptr);  // the run's rows pass: nothing to explain
  EXPECT_EQ(find(f, "ACCUMULATION_NOISE"), nullptr);  // "no action needed" never beside a cause
}

// A parameter failed by its update check while its own value agrees within rounding, with no element counts
// that would show its steps rounding to nothing (UPDATE_LOST_TO_ROUNDING's evidence): no rule names a cause,
// so NO_CAUSE_FOUND lists the row and why, and the noise summary counts it as structural, never as noise.
TEST(NoCauseFound, AFailingRunWithoutACauseSaysSo) {
  Synth s;
  ParameterUpdate u;
  u.rel_error = 1;
  s.stalled_norm_weight(u);
  s.result.summary = summarize_compare(s.result);
  Findings f = analyse_and_diagnose(s.result, nullptr, nullptr);
  EXPECT_EQ(f.analysis.rows_structural, 1);
  EXPECT_EQ(f.analysis.rows_noise, 2);
  const Diagnosis* none = find(f, "NO_CAUSE_FOUND");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->severity, Severity::kFail);
  ASSERT_FALSE(none->events.empty());
  EXPECT_EQ(none->events[0], "norm/forward/parameter/weight");
  std::string text;
  for (const std::string& e : none->evidence) text += e + "\n";
  EXPECT_NE(text.find("1 failing rows looked at (1 parameter update)"), std::string::npos) << text;
  EXPECT_NE(text.find("rounds to nothing"), std::string::npos) << text;
  EXPECT_NE(text.find("norm/forward/parameter/weight [parameter update]"), std::string::npos) << text;
  EXPECT_NE(text.find("1 of them differ by 1.00 of the update's size, as a target update of zero does"), std::string::npos)
      << text;
}

TEST(NoCauseFound, PlainTensorFilesSayWhyNoRuleCanRelateARow) {
  Synth s;
  s.row("blocks.2.attn.proj", "", "", "", 0, 1.0);
  s.last_golden().name = s.last_target().name = "blocks.2.attn.proj";
  s.last_golden().role = s.last_target().role = "";
  s.result.summary = summarize_compare(s.result);
  Findings f = analyse_and_diagnose(s.result, nullptr, nullptr);
  ASSERT_FALSE(f.analysis.has_events);
  const Diagnosis* none = find(f, "NO_CAUSE_FOUND");
  ASSERT_NE(none, nullptr);
  std::string text;
  for (const std::string& e : none->evidence) text += e + "\n";
  EXPECT_NE(text.find("beyond rounding: the inputs hold tensors without ops"), std::string::npos) << text;
}

TEST(NoCauseFound, SilentWhenACauseIsNamedOrTheRunPasses) {
  Synth named;  // a bf16 norm that fails: LOW_PRECISION_SENSITIVE_OP names the cause
  named.module("embed", "Embedding", 0, 1e-3, DType::kBF16);
  named.module("layers.0.norm", "RMSNorm", 1e-3, 0.4, DType::kBF16);
  named.result.summary = summarize_compare(named.result);
  ASSERT_EQ(named.result.summary.verdict, Verdict::kFail);
  Findings f = analyse_and_diagnose(named.result, nullptr, nullptr);
  ASSERT_NE(find(f, "LOW_PRECISION_SENSITIVE_OP"), nullptr);
  EXPECT_EQ(find(f, "NO_CAUSE_FOUND"), nullptr);

  Synth clean;
  clean.module("embed", "Embedding", 0, 1e-8);
  clean.result.summary = summarize_compare(clean.result);
  EXPECT_EQ(find(analyse_and_diagnose(clean.result, nullptr, nullptr), "NO_CAUSE_FOUND"), nullptr);
}

// An attention whose target lacks the 1/√d division: the matmul agrees, the softmax's input and output
// differ (a carrier), the module's output differs. The op missing from the target is the first suspect
// (kind structure) and STRUCTURE_DIFF names it.
Synth attention_without_a_division(const std::string& missing_op) {
  Synth s;
  s.row("blocks.1", "Attention", "forward", "input", 0, 0);
  s.row("blocks.1", "matmul", "forward", "input", 0, 0);
  s.row("blocks.1", "matmul", "forward", "output", 0, 1e-8);
  for (const char* role : {"input", "output"}) {
    Record r;
    r.name = "blocks.1/" + missing_op + "#0/forward/" + role + "/0";
    r.module = "blocks.1";
    r.op = missing_op;
    r.direction = "forward";
    r.role = role;
    r.step = r.rank = 0;
    r.order = s.order++;
    s.result.unmatched_golden.push_back(r);
  }
  s.row("blocks.1", "softmax", "forward", "input", 0, 0.9);
  s.row("blocks.1", "softmax", "forward", "output", 0, 0.5);
  s.row("blocks.1", "Attention", "forward", "output", 0, 0.5);
  s.result.summary = summarize_compare(s.result);
  return s;
}

TEST(StructureDiff, TheMissingOpIsTheFirstSuspectAndIsNamed) {
  Synth s = attention_without_a_division("div");
  Findings f = analyse_and_diagnose(s.result, nullptr, nullptr);
  ASSERT_FALSE(f.analysis.suspects.empty());
  const Suspect& top = f.analysis.suspects[0];
  EXPECT_EQ(top.kind, SuspectKind::kStructure);
  EXPECT_EQ(top.name, "blocks.1/div#0/forward");
  EXPECT_NE(top.why.find("only in the golden run"), std::string::npos) << top.why;
  EXPECT_STREQ(suspect_kind_name(top.kind), "structure");
  const Diagnosis* d = find(f, "STRUCTURE_DIFF");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->events[0], "blocks.1/div#0/forward");
  EXPECT_EQ(d->severity, Severity::kWarn);
  EXPECT_EQ(d->strength, 3);
  EXPECT_EQ(find(f, "NO_CAUSE_FOUND"), nullptr);  // a cause is named
}

TEST(StructureDiff, CastsAndCallsWithoutErrorAreNotStructure) {
  Synth cast = attention_without_a_division("to");  // a cast present in one run: how it stores values
  Findings fc = analyse_and_diagnose(cast.result, nullptr, nullptr);
  EXPECT_EQ(find(fc, "STRUCTURE_DIFF"), nullptr);
  for (const Suspect& sp : fc.analysis.suspects) EXPECT_NE(sp.kind, SuspectKind::kStructure);

  Synth clean;  // an op in one run only, in a call that creates no error after it
  clean.row("blocks.1", "Attention", "forward", "input", 0, 0);
  Record r;
  r.name = "blocks.1/div#0/forward/output/0";
  r.module = "blocks.1";
  r.op = "div";
  r.direction = "forward";
  r.role = "output";
  r.step = r.rank = 0;
  r.order = clean.order++;
  clean.result.unmatched_golden.push_back(r);
  clean.row("blocks.1", "softmax", "forward", "output", 0, 1e-8);
  clean.row("blocks.1", "Attention", "forward", "output", 0, 1e-8);
  Findings f = analyse_and_diagnose(clean.result, nullptr, nullptr);
  EXPECT_EQ(find(f, "STRUCTURE_DIFF"), nullptr);
  EXPECT_TRUE(f.analysis.suspects.empty());
}

}  // namespace
}  // namespace parity
