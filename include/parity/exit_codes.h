// parity/exit_codes.h — the process exit codes of every parity command (README "Exit codes").
// The library decides them (a CompareReport carries its code); the CLI returns them.
#pragma once

namespace parity {

inline constexpr int kExitOk = 0;           // everything compared passed
inline constexpr int kExitDifferences = 1;  // a row warned or failed, a record was unmatched or unreadable
inline constexpr int kExitUsage = 2;        // bad options, or an input with nothing usable in it
inline constexpr int kExitInternal = 3;     // a bug in parity

}  // namespace parity
