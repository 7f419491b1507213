// peak_resident_bytes (parity/resources.h).
#include "parity/resources.h"

#include <malloc.h>
#include <sys/resource.h>

// mimalloc's, when the program links it (the parity tool, PARITY_MIMALLOC); the library does not.
extern "C" void mi_collect(bool force) __attribute__((weak));

namespace parity {

int64_t peak_resident_bytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

void release_free_memory() {
  if (mi_collect != nullptr) {
    mi_collect(true);
  } else {
    malloc_trim(0);
  }
}

}  // namespace parity
