// parity/schemas.h — every schema id parity writes or reads, each declared once with what it names and
// the docs/ page that documents it. Every machine-readable output carries one (a JSON document's
// "schema", a CSV's first column, an Arrow file's metadata); writers and readers in C++ use these
// constants, the Python package reads them through the extension (`_parity_core.schemas.<NAME>`,
// python/ext/bind_schemas.cpp). Owned by core: every layer writes or reads one.
//
// A new output: one `inline constexpr Schema` here, one entry in kAll, and its section in the named
// page; tests/core/schemas_test.cpp holds all three (and that src/ spells no schema id as a literal).
// A revision bumps the number after '/' (the old id stays out of this list: nothing writes it).
#pragma once

#include <string_view>

namespace parity::schemas {

struct Schema {
  const char* name;  // the Python attribute (_parity_core.schemas.<name>)
  const char* id;    // "parity.<what>/<revision>"
  const char* doc;   // the page that documents it, from the source root
  const char* what;  // one line: which output, written by whom
};

// ---- parity compare -----------------------------------------------------------------------------------
inline constexpr Schema kCompare{"COMPARE", "parity.compare/1", "docs/compare-json.md",
                                 "compare --json: summary, rows, findings (src/pipeline/compare_json.cpp)"};
inline constexpr Schema kCompareCsv{"COMPARE_CSV", "parity.compare.csv/2", "docs/compare-json.md",
                                    "compare --csv: one line per row, the schema in the first column"};
inline constexpr Schema kCompareArrow{"COMPARE_ARROW", "parity.compare.arrow/1", "docs/compare-json.md",
                                      "compare --arrow: the CSV's rows typed, named in the metadata \"parity.schema\""};
inline constexpr Schema kCompareMsprobe{"COMPARE_MSPROBE", "parity.compare.msprobe/1", "docs/compare-json.md",
                                        "compare --msprobe-csv/--msprobe-xlsx: msprobe's compare_result layout"};
inline constexpr Schema kOverflow{"OVERFLOW", "parity.overflow/1", "docs/diagnosis.md",
                                  "overflow --json, and compare's \"overflow\" key: NaN/Inf origins, over/underflow"};

// ---- capture runs ---------------------------------------------------------------------------------------
inline constexpr Schema kDump{"DUMP", "parity.dump/1.1", "docs/dump-format.md",
                              "the header record a capture writer puts in each part's manifest"};
inline constexpr Schema kDumpMajor{"DUMP_MAJOR", "parity.dump/1", "docs/dump-format.md",
                                   "the dump revision a reader takes, with each of its minor versions"};
inline constexpr Schema kInfo{"INFO", "parity.info/1", "docs/dump-format.md",
                              "info --json: a run's parts, steps, events, fingerprints and problems"};
inline constexpr Schema kExport{"EXPORT", "parity.export/2", "docs/dump-format.md",
                                "export: the index.json beside the exported tensor files (also read back)"};
inline constexpr Schema kFingerprint{"FINGERPRINT", "parity.fingerprint/1", "docs/capture.md",
                                     "the environment fingerprint a capture records (python/parity/fingerprint.py)"};

// ---- training curves --------------------------------------------------------------------------------------
inline constexpr Schema kCurve{"CURVE", "parity.curve/1", "docs/curves.md", "curve --json: two runs' scalar curves"};
inline constexpr Schema kCurveCsv{"CURVE_CSV", "parity.curve.csv/2", "docs/curves.md",
                                  "curve --csv: one line per metric and step"};
inline constexpr Schema kRanks{"RANKS", "parity.ranks/1", "docs/curves.md", "ranks --json: the ranks of one run"};
inline constexpr Schema kRanksCsv{"RANKS_CSV", "parity.ranks.csv/2", "docs/curves.md",
                                  "ranks --csv: one line per metric and disagreeing rank"};

// ---- eval -------------------------------------------------------------------------------------------------
inline constexpr Schema kLogits{"LOGITS", "parity.logits/1", "docs/eval.md",
                                "the compact logits file (.plg) parity.log_logits writes and eval reads"};
inline constexpr Schema kEvalPpl{"EVAL_PPL", "parity.eval.ppl/1", "docs/eval.md",
                                 "eval ppl --json: perplexity, KLD, Δp and same-top of two runs"};
inline constexpr Schema kEvalPplCsv{"EVAL_PPL_CSV", "parity.eval.ppl.csv/2", "docs/eval.md",
                                    "eval ppl --csv: one line per token"};
inline constexpr Schema kEvalMc{"EVAL_MC", "parity.eval.mc/2", "docs/eval.md",
                                "eval mc --json: multiple-choice accuracy, McNemar and bootstrap"};
inline constexpr Schema kEvalMcCsv{"EVAL_MC_CSV", "parity.eval.mc.csv/2", "docs/eval.md",
                                   "eval mc --csv: one line per group (overall, subjects)"};
inline constexpr Schema kEvalLmEval{"EVAL_LMEVAL", "parity.eval.lmeval/2", "docs/eval.md",
                                    "eval lm-eval --json: two lm-evaluation-harness results task by task"};
inline constexpr Schema kEvalLmEvalCsv{"EVAL_LMEVAL_CSV", "parity.eval.lmeval.csv/2", "docs/eval.md",
                                       "eval lm-eval --csv: one line per task, metric and filter"};

// ---- the Python engines -------------------------------------------------------------------------------------
inline constexpr Schema kReplay{"REPLAY", "parity.replay/1", "docs/replay.md",
                                "replay --json: each replayed op's error given its inputs (python/parity/replay/)"};
inline constexpr Schema kScan{"SCAN", "parity.scan/1", "docs/scan.md",
                              "scan --json: units ranked by sensitivity and the plan (python/parity/sensitivity.py)"};
inline constexpr Schema kScanState{"SCAN_STATE", "parity.scan.state/1", "docs/scan.md",
                                   "scan --state: the header line of the resumable JSONL state file"};

inline constexpr Schema kMonitor{"MONITOR", "parity.monitor/1", "docs/monitor.md",
                                 "parity monitor --json: the anomalies of one run, without a golden"};

// ---- inputs users write ------------------------------------------------------------------------------------
inline constexpr Schema kLayout{"LAYOUT", "parity.layout/1", "docs/layout.md",
                                "the layout file: how modules split across ranks, how each run is laid out"};

// ---- the HTML report -------------------------------------------------------------------------------------------
inline constexpr Schema kReportData{"REPORT_DATA", "parity.report-data/1", "docs/report.md",
                                    "the data envelope a report embeds (the results and their origins)"};
inline constexpr Schema kReportTree{"REPORT_TREE", "parity.report-tree/2", "docs/report.md",
                                    "the model-tree index a report embeds beside a compare result's rows"};

// Every schema above, once.
inline constexpr const Schema* kAll[] = {
    &kCompare, &kCompareCsv, &kCompareArrow, &kCompareMsprobe, &kOverflow, &kDump, &kDumpMajor, &kInfo,
    &kExport, &kFingerprint, &kCurve, &kCurveCsv, &kRanks, &kRanksCsv, &kLogits, &kEvalPpl, &kEvalPplCsv,
    &kEvalMc, &kEvalMcCsv, &kEvalLmEval, &kEvalLmEvalCsv, &kReplay, &kScan, &kScanState, &kReportData,
    &kReportTree, &kLayout, &kMonitor};

// The family of an id: "parity.compare/" of "parity.compare/1". A reader that takes every revision of a
// family (the report, parity replay --suspects) tests an id's prefix against it.
constexpr std::string_view family(const Schema& s) {
  const std::string_view id(s.id);
  return id.substr(0, id.find('/') + 1);
}

}  // namespace parity::schemas
