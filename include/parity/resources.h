// parity/resources.h — what a process has used of the machine, for reports (docs/scaling.md).
#pragma once

#include <cstdint>

namespace parity {

// The process's peak resident set so far, in bytes (getrusage's ru_maxrss): its heap and every page of
// a memory-mapped input it has touched. 0 where the system does not say.
int64_t peak_resident_bytes();

// Hands memory the heap holds free back to the system, between the phases of a large job (a compare
// frees its listing's and measurement's temporaries before the analyses allocate theirs): mimalloc's
// mi_collect where the tool links mimalloc (it keeps freed pages for reuse), glibc's malloc_trim else.
void release_free_memory();

}  // namespace parity
