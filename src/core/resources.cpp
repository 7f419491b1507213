// peak_resident_bytes (parity/resources.h).
#include "parity/resources.h"

#include <sys/resource.h>

namespace parity {

int64_t peak_resident_bytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace parity
