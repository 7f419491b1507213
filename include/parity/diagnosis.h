// parity/diagnosis.h — from findings to causes: a rule engine with evidence and advice.
//
// Each rule is one file src/diagnosis/rules/<code>.cpp defining a `Rule`, plus one line in
// src/diagnosis/registry.cpp. A rule reads the compare result, the analysis (noise classes, suspects,
// first divergence), the configuration differences and the NaN/Inf report, and returns zero or more
// diagnoses, each naming its evidence with numbers and event names. Rules and their thresholds are
// documented in docs/diagnosis.md with their sources (seed 004 §5 symptom table, anchors.md).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "parity/analysis.h"
#include "parity/compare.h"
#include "parity/source.h"

namespace parity {

// What a diagnosis says about the run as a whole (docs/diagnosis.md "Severity"), the one way a finding
// reaches the headline and exit code (decide_run_verdict):
//   kInfo — context that never changes the verdict (CONFIG_DIFF, ACCUMULATION_NOISE, a loss scale, a
//           flipped decision, an argument difference with no effect on the output);
//   kWarn — a cause of error the rows show: the run is at least PASSED WITH WARNINGS, and the rows decide
//           whether it fails;
//   kFail — the run is broken whatever its rows say (NaN/Inf born in the target from finite inputs,
//           other inputs or weights, gradients that overflow or underflow).
// kInfo is the default: a rule must say so to change the verdict.
enum class Severity : uint8_t { kInfo, kWarn, kFail };
const char* severity_name(Severity s);  // "info" | "warn" | "fail"

struct Diagnosis {
  std::string code;                   // stable: "LOW_PRECISION_SENSITIVE_OP", ...
  std::string title;                  // one line
  std::vector<std::string> evidence;  // numbers and event names
  std::string advice;
  std::vector<std::string> events;    // event names the diagnosis is about (most important first)
  // How strongly this explains the difference, for ordering: 3 = root cause found in the data,
  // 2 = likely cause, 1 = contributing / informational, 0 = no action needed.
  int strength = 1;
  Severity severity = Severity::kInfo;
};

// Everything a rule may read. Sources are optional: with them a rule may load a few tensors (FLUSH_TO_ZERO
// reads the suspect's tensors to see where the error sits).
struct DiagnosisContext {
  const CompareResult* result = nullptr;
  const Analysis* analysis = nullptr;
  const std::vector<ConfigDifference>* config = nullptr;
  const OverflowReport* target_overflow = nullptr;  // from the target side of the rows
  const OverflowReport* golden_overflow = nullptr;
  const RecordSource* golden_source = nullptr;      // may be null
  const RecordSource* target_source = nullptr;      // may be null
  AnalysisOptions options;
  // The diagnoses of the rules registered before the one running (NO_CAUSE_FOUND reads them); null
  // outside diagnose().
  const std::vector<Diagnosis>* earlier = nullptr;
};

struct Rule {
  const char* code;
  const char* title;
  std::vector<Diagnosis> (*run)(const DiagnosisContext& ctx);
};

// The registered rules (src/diagnosis/registry.cpp), in evaluation order.
const std::vector<Rule>& registered_rules();

// Runs every rule; results ordered by strength (strongest first), then registration order.
std::vector<Diagnosis> diagnose(const DiagnosisContext& ctx);

// The verdict of a whole run, the one answer that the headline, the exit code and the JSON summary give
// (docs/diagnosis.md "Severity", docs/cli.md "Exit codes"): the worst of the rows' verdict
// (CompareSummary::verdict: rows, unmatched records, unreadable files) and every diagnosis's severity.
struct RunVerdict {
  Verdict verdict = Verdict::kPass;
  // Why the verdict is worse than the rows' alone ("" = the rows decide): "OVERFLOW: NaN/Inf are born at
  // an op (the rows alone: warn)".
  std::string raised_by;
};
RunVerdict decide_run_verdict(Verdict rows_verdict, const std::vector<Diagnosis>& diagnoses);

// Everything compare adds after measuring: noise classes, analysis, configuration differences, the
// NaN/Inf reports of both sides and the diagnoses. `golden`/`target` may be null (no tensor loading).
struct Findings {
  Analysis analysis;
  std::vector<ConfigDifference> config;
  OverflowReport target_overflow, golden_overflow;
  std::vector<Diagnosis> diagnoses;
  // Where the runs part beyond accumulated noise, over a comparison of two steps or more (docs/timeline.md).
  std::optional<DivergenceTimeline> timeline;
};
Findings analyse_and_diagnose(CompareResult& result, const RecordSource* golden, const RecordSource* target,
                              const AnalysisOptions& options = {});

// ---- outputs (docs/diagnosis.md) ------------------------------------------------------------------------
// One run's NaN/Inf report as a parity.overflow/1 object.
nlohmann::json overflow_to_json(const OverflowReport& r);

// Terminal sections of compare: configuration differences (printed first), then first divergence, top
// suspects and diagnoses (printed after the table). `color` adds ANSI styles.
void print_config_diff(std::FILE* out, const std::vector<ConfigDifference>& diffs, bool color);
void print_findings(std::FILE* out, const Findings& f, const CompareResult& result, bool color, size_t max_suspects = 5);
// The divergence timeline's terminal lines (a few: first crossing, cause, per-phase first crossings) and its
// JSON, the `divergence_timeline` key of parity.compare/1 (docs/compare-json.md).
void print_timeline(std::FILE* out, const DivergenceTimeline& t, bool color);
nlohmann::json timeline_to_json(const DivergenceTimeline& t);
// `parity overflow` terminal output.
void print_overflow(std::FILE* out, const OverflowReport& r, bool color);
// The verdict line `parity overflow` ends with (--quiet keeps only it), from overflow_verdict:
// "overflow: FOUND | 1 NaN/Inf origin(s), gradient overflow no, underflow no, 0 problem(s)".
void print_overflow_verdict(std::FILE* out, const OverflowReport& r);

}  // namespace parity
