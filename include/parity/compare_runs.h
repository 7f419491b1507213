// parity/compare_runs.h — the compare pipeline, from two sources to one report.
//
// compare_runs() is the only path from inputs to a CompareReport; the CLI (`parity compare`), the
// report and the Python binding (parity.compare) all call it and only render what it returns:
//
//   match → measure → fixed-threshold judgement      run_compare          (parity/compare.h)
//   → noise class of every row                        classify_rows        (parity/analysis.h)
//   → final row verdicts under the policy             apply_verdict_policy (parity/verdict_policy.h)
//   → first divergence, local error, suspects         analyse
//   → NaN/Inf origins of both sides, diagnoses        analyse_and_diagnose (parity/diagnosis.h)
//   → run verdict (rows + diagnoses' severities)      decide_run_verdict   (parity/diagnosis.h)
//   → exit code                                       gate_exit_code       (parity/exit_codes.h)
//
// Schema parity.compare/1 (docs/compare-json.md) has one serializer, src/pipeline/compare_json.cpp:
// write_compare_row_json writes a row, and the --json file, the Python binding's text and the
// in-memory tree (compare_report_to_json) are assembled from it and the document's head.
#pragma once

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "parity/compare.h"
#include "parity/diagnosis.h"
#include "parity/exit_codes.h"
#include "parity/schemas.h"

namespace parity {

// The name src/pipeline/compare_json.cpp writes; the id is schemas::kCompare (parity/schemas.h).
inline constexpr const char* kCompareSchema = schemas::kCompare.id;

// Replay confirms localisation (docs/replay.md "compare --replay"): the top suspects' ops are executed
// again on their recorded inputs, and each suspect is marked confirmed (it creates the error given its
// inputs) or refuted (it only carries it). The pipeline owns when and what; a runner owns how (the CLI's
// runs the Python engine `python -m parity.replay confirm`, which needs torch).
struct ReplayRequest {
  std::string event;  // the suspect's event name (Suspect::name)
  int64_t step = -1;
  int rank = -1;
};
struct ReplayVerdict {
  std::string event;
  int64_t step = -1;
  int rank = -1;
  std::string status;    // confirmed | refuted | inconclusive | not_replayed
  std::string evidence;  // one line
};
class ReplayRunner {
 public:
  virtual ~ReplayRunner() = default;
  // One verdict per request it could answer; an error when the engine could not run at all.
  virtual Result<std::vector<ReplayVerdict>> confirm(const std::vector<ReplayRequest>& suspects) = 0;
};

struct CompareRunOptions {
  CompareOptions compare;    // pairing, measuring, thresholds (thresholds.policy picks the verdict policy)
  AnalysisOptions analysis;  // noise classes, local error, suspects
  std::string command;       // the command line that asked, recorded in the report ("" = none)
  bool fail_on_warn = false; // a warn verdict fails the gate too (exit 1)
  ReplayRunner* replay = nullptr;  // non-null: replay the top suspects and re-rank them (--replay)
  size_t replay_suspects = 5;      // how many of the top suspects are replayed
};

// Which part of a failing row's record carries its error, where the run held the record apart (a TP
// shard of a record merged by --layout, a PP stage: RecordSource::shards; docs/layout.md "Shards").
struct ShardError {
  std::string label;           // "TP shard 1 of 2"
  double rel_l2 = 0, cosine = 0, max_abs = 0;  // of this part of the pair (the row's own, for a whole part)
};
struct RowShards {
  size_t row = 0;              // index into result.rows
  std::string side;            // "target" or "golden": the side whose record was held apart
  std::vector<ShardError> shards;
};
// At most this many failing rows are attributed, in row order (each reads both tensors once more).
inline constexpr size_t kMaxShardRows = 64;
std::vector<RowShards> attribute_shards(const CompareResult& result, const RecordSource& golden,
                                        const RecordSource& target);

struct CompareReport {
  CompareResult result;      // rows with their final verdicts, unmatched records, problems, notes
  std::vector<RowShards> shards;  // failing rows of records held apart, by part (attribute_shards)
  Findings findings;         // analysis, configuration differences, NaN/Inf reports, diagnoses
  // result.summary.verdict is the run verdict (decide_run_verdict: the rows' verdict raised by the
  // diagnoses' severities); `verdict_raised_by` names the diagnosis that raised it ("" = the rows decide).
  std::string verdict_raised_by;
  // gate_exit_code of the run verdict: kExitOk when it is pass or warn, kExitDifferences when it is
  // fail or error (or warn with fail_on_warn); kExitUsage when a side holds no readable record or the
  // filters leave nothing to compare (`no_input` says which).
  int exit_code = kExitOk;
  std::string no_input;
  std::string command;
  double elapsed_seconds = 0;
  bool replay_asked = false;   // --replay: suspects carry replay_status
  std::string replay_problem;  // why the replay could not run ("" = it ran)
  double replay_seconds = 0;
};

// The run verdict as every output spells it (JSON summary.verdict, parity.compare()'s dict, the headline):
// "no_input" when nothing could be compared (`no_input` says why; exit 2) — never "pass", so a script that
// gates on the verdict cannot let an unreadable run through — else verdict_name(result.summary.verdict).
const char* run_verdict_name(const CompareReport& report);
// The headline, as the terminal's last line and the JSON's summary.headline (and so the HTML report) say
// it: "NO INPUT" (exit 2), "FAILED" (exit 1: a fail or error verdict, or a warning under --fail-on-warn),
// "PASSED WITH WARNINGS" or "PASSED" (exit 0). The exit code decides: a verdict "error" reads FAILED.
const char* run_headline(const CompareReport& report);

// Under a group of several processes (options.compare.group) every process calls it; process 0 returns
// the report, the others an empty one (nothing to render: their measurements are in process 0's).
Result<CompareReport> compare_runs(const RecordSource& golden, const RecordSource& target,
                                   const CompareRunOptions& options);

// One row of "rows", pretty-printed (indent 2) as nlohmann's dump(2) spells it, every line after the
// first prefixed with `pad`: the one writer of a row's JSON.
void write_compare_row_json(const CompareRow& row, std::string& out, std::string_view pad);

// The whole report as a parity.compare/1 object.
nlohmann::json compare_report_to_json(const CompareReport& report);
// The same document holding only the rows `rows` (indices into report.result.rows, ascending), for a
// reader that shows a selection: the other rows are never serialized.
nlohmann::json compare_report_to_json(const CompareReport& report, const std::vector<size_t>& rows);

// The same document written to `out` (pretty-printed, 2 spaces) one row at a time: memory stays at
// the report itself plus one row's JSON, where the object above holds every row's JSON tree at once
// (about 8x the row table: 1.4 GB for 100,000 rows). Non-UTF-8 bytes are replaced (json_text).
Status write_compare_report_json(const CompareReport& report, std::FILE* out);
// The same text as one string (the Python binding's result), never a tree of every row.
std::string compare_report_json_text(const CompareReport& report);

}  // namespace parity
