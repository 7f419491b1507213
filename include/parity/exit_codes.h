// parity/exit_codes.h — the process exit codes of every parity command (README "Exit codes",
// docs/cli.md "Exit codes"). The library decides them (a CompareReport carries its code); the CLI returns them.
#pragma once

#include "parity/verdict.h"

namespace parity {

inline constexpr int kExitOk = 0;           // the verdict is pass, or warn (a warning is shown, not a failure)
inline constexpr int kExitDifferences = 1;  // the verdict is fail or error (or warn under --fail-on-warn)
inline constexpr int kExitUsage = 2;        // bad options, or an input with nothing usable in it
inline constexpr int kExitInternal = 3;     // a bug in parity

// The exit code of a run's verdict, the whole rule: fail and error exit 1, warn exits 0 unless
// `fail_on_warn`, pass exits 0. The verdict is the one the headline prints (for compare, the run verdict
// of decide_run_verdict, parity/diagnosis.h), so the two never disagree.
inline int verdict_exit_code(Verdict v, bool fail_on_warn) {
  const bool fails = v == Verdict::kFail || v == Verdict::kError || (v == Verdict::kWarn && fail_on_warn);
  return fails ? kExitDifferences : kExitOk;
}

}  // namespace parity
