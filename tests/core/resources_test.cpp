// What a process has used of the machine (parity/resources.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "parity/resources.h"

namespace parity {
namespace {

// The resident set now (not the peak), from /proc/self/statm's second field, in bytes.
int64_t resident_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  const int n = std::fscanf(f, "%ld %ld", &pages, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE) : -1;
}

// A million small blocks freed behind one that stays (as a compare's rows stay behind its listing's
// temporaries): the heap cannot shrink from its top, and keeps the freed pages until it is asked.
TEST(Resources, ReleaseFreeMemoryHandsFreedPagesBack) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator keeps freed blocks in quarantine";
#endif
  constexpr size_t kBlocks = 1 << 20, kBytes = 96;
  std::vector<std::unique_ptr<char[]>> blocks(kBlocks);
  for (auto& b : blocks) {
    b = std::make_unique<char[]>(kBytes);
    b[0] = 1;
  }
  auto last = std::make_unique<char[]>(kBytes);  // above every freed block
  blocks.clear();
  blocks.shrink_to_fit();
  const int64_t before = resident_bytes();
  release_free_memory();
  const int64_t after = resident_bytes();
  ASSERT_GT(before, 0);
  EXPECT_LT(after, before - (int64_t{48} << 20)) << "resident " << before << " -> " << after << " bytes";
  last[0] = 2;
}

}  // namespace
}  // namespace parity
