// parity/resources.h — what a process has used of the machine, for reports (docs/scaling.md).
#pragma once

#include <cstdint>

namespace parity {

// The process's peak resident set so far, in bytes (getrusage's ru_maxrss): its heap and every page of
// a memory-mapped input it has touched. 0 where the system does not say.
int64_t peak_resident_bytes();

}  // namespace parity
