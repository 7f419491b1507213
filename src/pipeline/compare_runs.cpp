// compare_runs: the compare pipeline (parity/compare_runs.h lists its stages).
#include "parity/compare_runs.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "parity/resources.h"
#include "parity/spill.h"
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

// Filters that leave nothing to compare are a usage error, not an empty pass: say which filters and
// what the golden holds.
std::string filters_match_nothing(const CompareResult& r, const CompareOptions& o, const RecordSource& golden) {
  if (!r.rows.empty() || !r.unmatched_golden.empty() || !r.unmatched_target.empty() || r.filtered == 0) return "";
  std::string filters;
  if (o.step >= 0) filters += " --step " + std::to_string(o.step);
  if (o.rank >= 0) filters += " --rank " + std::to_string(o.rank);
  if (!o.direction.empty()) filters += " --direction " + o.direction;
  for (const std::string& p : o.include) filters += " --include '" + p + "'";
  for (const std::string& p : o.exclude) filters += " --exclude '" + p + "'";
  std::set<int64_t> steps;
  std::set<int> ranks;
  for (const Record& rec : golden.records()) {
    if (rec.step >= 0) steps.insert(rec.step);
    if (rec.rank >= 0) ranks.insert(rec.rank);
  }
  auto span = [](const auto& set) {
    return set.empty() ? std::string("none")
                       : std::to_string(*set.begin()) + (set.size() > 1 ? "–" + std::to_string(*set.rbegin()) : "");
  };
  return "no record matches the filters" + filters + " (the golden holds " +
         std::to_string(golden.records().size()) + " records, steps " + span(steps) + ", ranks " + span(ranks) + ")";
}

// Replays the top suspects (ReplayRunner) and re-ranks: confirmed first, refuted last, each group in
// its previous order (stable), so replay evidence outranks the row-based score only where it exists.
void replay_suspects(CompareReport& report, const CompareRunOptions& options) {
  auto& suspects = report.findings.analysis.suspects;
  report.replay_asked = true;
  if (suspects.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<ReplayRequest> requests;
  for (size_t i = 0; i < suspects.size() && i < options.replay_suspects; ++i)
    requests.push_back({suspects[i].name, suspects[i].step, suspects[i].rank});
  Result<std::vector<ReplayVerdict>> verdicts = options.replay->confirm(requests);
  report.replay_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!verdicts.ok()) {
    report.replay_problem = verdicts.status().message();
    return;
  }
  for (const ReplayVerdict& v : *verdicts)
    for (Suspect& s : suspects)
      if (s.name == v.event && s.step == v.step && s.rank == v.rank) {
        s.replay_status = v.status;
        s.replay_evidence = v.evidence;
      }
  auto rank = [](const Suspect& s) { return s.replay_status == "confirmed" ? 0 : s.replay_status == "refuted" ? 2 : 1; };
  std::stable_sort(suspects.begin(), suspects.end(),
                   [&](const Suspect& a, const Suspect& b) { return rank(a) < rank(b); });
}

}  // namespace

Result<CompareReport> compare_runs(const RecordSource& golden, const RecordSource& target,
                                   const CompareRunOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  CompareReport report;
  release_free_memory();  // the listing's temporaries (manifest texts, parse buffers), before the rows
  PARITY_ASSIGN_OR_RETURN(report.result, run_compare(golden, target, options.compare));
  // Under a group of processes the other processes' rows went to process 0: the analyses, which need
  // the whole picture, and the replay run there alone.
  if (!is_output_process(options.compare.group)) return report;
  CompareResult& result = report.result;
  release_free_memory();  // the measurement's temporaries, before the analyses' own
  classify_rows(result, options.analysis, &golden, &target);
  apply_verdict_policy(result, options.compare.thresholds.policy);
  report.findings = analyse_and_diagnose(result, &golden, &target, options.analysis);
  result.context = RowList();  // classified with the rows it explains; never shown
  report.shards = attribute_shards(result, golden, target);
  if (options.replay != nullptr) replay_suspects(report, options);
  keep_suspect_events(report.findings.analysis);
  if (const std::string why = spill::first_failure(); !why.empty())
    result.notes.push_back("some large tables stayed in memory, not in a spill file (" + why +
                           "): PARITY_SPILL_DIR names a directory on disk (docs/scaling.md \"Memory\")");

  report.no_input = no_usable_input(golden, target);
  if (report.no_input.empty()) report.no_input = filters_match_nothing(result, options.compare, golden);
  // One answer (docs/cli.md "Exit codes"): the run verdict is the rows' verdict raised by any diagnosis that
  // says the run is worse (decide_run_verdict); the summary, the headline and the exit code all read it. A
  // warning (an elevated row, a weakly paired one, a cause of elevated error) is shown but does not fail
  // the gate unless asked (--fail-on-warn).
  const RunVerdict run = decide_run_verdict(result.summary.verdict, report.findings.diagnoses);
  result.summary.verdict = run.verdict;
  report.verdict_raised_by = run.raised_by;
  report.exit_code = gate_exit_code(run.verdict, options.fail_on_warn ? WarnGate::kFails : WarnGate::kShown, !report.no_input.empty());
  report.command = options.command;
  report.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (result.peak_resident_bytes.empty()) result.peak_resident_bytes.resize(1);
  result.peak_resident_bytes[0] = peak_resident_bytes();
  return report;
}

const char* run_verdict_name(const CompareReport& report) {
  return report.no_input.empty() ? verdict_name(report.result.summary.verdict) : "no_input";
}

const char* run_headline(const CompareReport& report) {
  if (!report.no_input.empty()) return "NO INPUT";
  if (report.exit_code != kExitOk) return "FAILED";
  return report.result.summary.verdict == Verdict::kWarn ? "PASSED WITH WARNINGS" : "PASSED";
}

}  // namespace parity
