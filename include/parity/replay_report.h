// parity/replay_report.h — the terminal form of a `parity replay` result (schemas::kReplay, parity.replay/1,
// docs/replay.md), rendered from the JSON the engine wrote, and its verdict: public in the report module,
// so `parity replay` only runs the engine, calls these and prints.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>

#include "parity/verdict.h"

namespace parity::report {

// Summary line, the events that create error, are not reproduced bit for bit or could not be replayed
// (up to `limit`, <= 0 = all; with `all` every replayed event too), and the reasons counted.
void print_replay(std::FILE* out, const nlohmann::json& doc, long limit, bool all, bool color);

// The verdict of a replay result's `summary`: pass when every selected op was replayed, reproduced bit for
// bit and stays within rounding; fail otherwise. `nothing` is set when no op was selected (no answer: exit 2).
struct ReplayOutcome {
  Verdict verdict = Verdict::kFail;
  bool nothing = false;
  const char* headline = "";  // REPRODUCED, DIFFERENCES, NOTHING REPLAYED, NOTHING TO REPLAY
};
ReplayOutcome replay_outcome(const nlohmann::json& summary);
// The verdict line `parity replay` ends with: "replay: REPRODUCED | 12 of 12 replayed, 12 bit-exact, 0 create
// error | 1.20 s", from the result `doc` and its outcome.
void print_replay_verdict(std::FILE* out, const nlohmann::json& doc, const ReplayOutcome& outcome);

}  // namespace parity::report
