// parity/exit_codes.h — the process exit codes of every parity command and the one gate that turns a
// command's verdict into one (docs/cli.md "Exit codes", the only place they are documented). The library
// decides the verdict (a CompareReport carries its code); the CLI returns gate_exit_code of it.
#pragma once

#include "parity/verdict.h"

namespace parity {

inline constexpr int kExitOk = 0;           // the verdict passes the gate
inline constexpr int kExitDifferences = 1;  // it does not: differences found
inline constexpr int kExitUsage = 2;        // bad options, or an input with nothing usable in it
inline constexpr int kExitInternal = 3;     // a bug in parity

// What a `warn` verdict does at the gate. compare's warnings are rows above rounding noise yet within the
// thresholds, weak pairings, layout changes: shown, not failed, unless --fail-on-warn. The warnings of
// eval, curve and ranks are a curve that diverges, a run that logged steps the other did not, unreadable
// lines: each the only signal of its kind there, so they fail.
enum class WarnGate : uint8_t { kShown, kFails };

// The exit code of a command's verdict, the whole rule: nothing usable to judge exits 2; fail and error
// exit 1; warn exits 1 under WarnGate::kFails, else 0; pass exits 0. The verdict is the one the headline
// prints (for compare, the run verdict of decide_run_verdict, parity/diagnosis.h), so the two never disagree.
inline int gate_exit_code(Verdict v, WarnGate warn, bool no_input = false) {
  if (no_input) return kExitUsage;
  const bool fails = v == Verdict::kFail || v == Verdict::kError || (v == Verdict::kWarn && warn == WarnGate::kFails);
  return fails ? kExitDifferences : kExitOk;
}

}  // namespace parity
