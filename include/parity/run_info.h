// parity/run_info.h — a capture run's summary and logged scalars, read by one process or by a group
// (`parity info`; `parity ranks` through the curve reader), and the summary's outputs (parity.info/1, text).
//
// A capture run of a thousand ranks has a thousand manifests to read; under a group of processes
// (mpirun) each reads its byte-balanced share of the ranks (plan_rank_shares) and process 0 gathers the
// parts' summaries. Parts and problems come out in rank order either way, so the report is the same.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "parity/dump.h"
#include "parity/process_group.h"
#include "parity/status.h"

namespace parity {

struct RunInfo {
  std::vector<dump::PartSummary> parts;          // in rank order
  std::map<int, std::string> fingerprints;  // environment JSON text by rank, where recorded
  std::vector<dump::ScalarRecord> scalars;  // what `cap.log(...)` recorded, part by part in rank order
  std::vector<Status> problems;             // unreadable or torn records, part by part in rank order
};

// Reads the summary of the run at `run_dir` (a run directory or one rank<R>/ part). Errors only when
// it is not a run. Under a group of several processes every process must call it: each reads its share
// of the ranks and process 0 returns the whole run's summary, the others an empty one; a process that
// cannot read its share makes every process's call fail, with that process's message.
Result<RunInfo> read_run_info(const std::filesystem::path& run_dir, const ProcessGroup* group = nullptr);

// ---- outputs (`parity info`, docs/dump-format.md "`parity info` JSON") -------------------------------
// A part is complete when its writer closed it and its manifest has no torn tail; a run, when every part
// is and no record is unreadable (`parity info` exits 0 on it, 1 otherwise).
bool part_complete(const dump::PartSummary& part);
bool run_complete(const RunInfo& run);

// The summary as the document schemas::kInfo (parity.info/1): the parts with their fingerprints, the
// problems and `complete`; `run_label` is the run as the user named it. No trailing newline.
std::string run_info_json(const RunInfo& run, const std::string& run_label, int indent = 2);

struct RunInfoTextOptions {
  bool full_fingerprints = false;  // each fingerprint in full (JSON) under its one-line summary
  bool color = false;              // ANSI colours for the parts' states and the problems
};
// The terminal text: one block per part (state, steps, events, bytes, scalars, fingerprint), then the problems.
std::string run_info_text(const RunInfo& run, const std::string& run_label, const RunInfoTextOptions& options = {});

}  // namespace parity
