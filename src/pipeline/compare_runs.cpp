// compare_runs: the compare pipeline (parity/compare_runs.h lists its stages).
#include "parity/compare_runs.h"

#include <chrono>

#include "parity/verdict_policy.h"

namespace parity {

namespace {

// A side without a single readable record leaves nothing to compare: no verdict can pass on it.
std::string no_usable_input(const RecordSource& golden, const RecordSource& target) {
  for (const auto& [side, src] : {std::pair{"golden", &golden}, std::pair{"target", &target}}) {
    if (!src->records().empty()) continue;
    return std::string("no usable input: ") + side + " " + src->describe() + " holds no readable tensors" +
           (src->problems().empty() ? "" : " (see 'unreadable')");
  }
  return "";
}

}  // namespace

Result<CompareReport> compare_runs(const RecordSource& golden, const RecordSource& target,
                                   const CompareRunOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  CompareReport report;
  PARITY_ASSIGN_OR_RETURN(report.result, run_compare(golden, target, options.compare));
  CompareResult& result = report.result;
  classify_rows(result, options.analysis);
  apply_verdict_policy(result, options.compare.thresholds.policy);
  report.findings = analyse_and_diagnose(result, &golden, &target, options.analysis);

  report.no_input = no_usable_input(golden, target);
  // The gate: a run passes unless something fails (a structural row, an error, a record that could not be
  // compared). A warning (an elevated row, a weakly paired one, a layout change) is shown but does not
  // fail the gate unless asked (--fail-on-warn).
  const Verdict v = result.summary.verdict;
  const bool gate_fails = v == Verdict::kFail || v == Verdict::kError || (v == Verdict::kWarn && options.fail_on_warn);
  report.exit_code = !report.no_input.empty() ? kExitUsage : gate_fails ? kExitDifferences : kExitOk;
  report.command = options.command;
  report.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace parity
