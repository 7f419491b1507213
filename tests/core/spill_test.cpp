// SpillAllocator (parity/spill.h): a large list lives in a mapped, unlinked file of the spill directory
// and leaves the process when freed; a small one is an ordinary heap block; an unusable directory means
// anonymous memory and a reason, never a failed allocation.
#include "parity/spill.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace parity {
namespace {

struct Item {
  uint64_t a = 0, b = 0, c = 0;  // 24 bytes, like a listing's entries
};

// mincore() fails with ENOMEM on a range that holds unmapped pages.
bool mapped(const void* p, size_t bytes) {
  std::vector<unsigned char> pages((bytes + 4095) / 4096 + 1);
  return ::mincore(const_cast<void*>(p), bytes, pages.data()) == 0;
}

// The /proc/self/maps line of the mapping that holds `p` ("" when none does).
std::string mapping_of(const void* p) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  for (std::string line; std::getline(maps, line);) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) == 2 && begin <= at && at < end) return line;
  }
  return "";
}

TEST(SpillAllocator, LargeListsLiveInAnUnlinkedSpillFileAndLeaveWhenFreed) {
  ASSERT_FALSE(spill::directory().empty());
  const size_t n = (size_t{4} << 20) / sizeof(Item);  // 4 MiB
  const void* data = nullptr;
  {
    SpillVector<Item> list(n);
    list[n - 1].c = 9;
    data = list.data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)), 0u);
    const std::string line = mapping_of(data);
    EXPECT_NE(line.find(" rw-s "), std::string::npos) << line;  // shared: written back, not swapped
    EXPECT_NE(line.find(spill::directory()), std::string::npos) << line;
    EXPECT_NE(line.find("(deleted)"), std::string::npos) << line;  // nobody else can reach it
    EXPECT_TRUE(mapped(data, n * sizeof(Item)));
    EXPECT_EQ(spill::first_failure(), "");
  }
  EXPECT_FALSE(mapped(data, n * sizeof(Item)));
  EXPECT_EQ(errno, ENOMEM);
}

TEST(SpillAllocator, SmallListsAndCopiesBehaveAsVectors) {
  SpillVector<Item> small(3), large(100000);
  small[2].c = 7;
  large[99999].a = 5;
  EXPECT_EQ(mapping_of(small.data()).find("(deleted)"), std::string::npos);  // heap, not a file
  auto copy = large;
  copy.insert(copy.end(), small.begin(), small.end());
  EXPECT_EQ(copy.size(), 100003u);
  EXPECT_EQ(copy[99999].a, 5u);
  EXPECT_EQ(copy[100002].c, 7u);
}

// The inode column of a /proc/self/maps line.
std::string inode_of(const std::string& line) {
  char perms[8], offset[32], device[16], inode[32];
  unsigned long begin = 0, end = 0;
  if (std::sscanf(line.c_str(), "%lx-%lx %7s %31s %15s %31s", &begin, &end, perms, offset, device, inode) != 6) return "";
  return inode;
}

// A forked child takes a spill file of its own for new lists, and freeing an inherited list in the child
// does not punch it out of the parent's file.
TEST(SpillAllocator, AForkedChildSpillsToItsOwnFileAndLeavesTheParentsListsAlone) {
  SpillVector<Item> parent_list(100000);
  for (size_t i = 0; i < parent_list.size(); ++i) parent_list[i].a = i;
  const std::string parent_inode = inode_of(mapping_of(parent_list.data()));
  ASSERT_NE(parent_inode, "");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    bool ok = true;
    {
      SpillVector<Item> child_list(100000);
      child_list[5].b = 1;
      const std::string inode = inode_of(mapping_of(child_list.data()));
      ok = inode != "" && inode != parent_inode && mapping_of(child_list.data()).find("(deleted)") != std::string::npos;
    }
    SpillVector<Item>().swap(parent_list);  // the child frees the inherited list
    std::_Exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  bool intact = true;
  for (size_t i = 0; i < parent_list.size(); ++i) intact = intact && parent_list[i].a == i;
  EXPECT_TRUE(intact);
  SpillVector<Item> after(100000);  // the parent's file still serves new lists
  EXPECT_EQ(inode_of(mapping_of(after.data())), parent_inode);
}

// The directory is read once per process, so the case runs in a fresh one (a death test re-executes the
// binary).
TEST(SpillAllocatorDeathTest, AnUnusableDirectoryMeansAnonymousMemoryAndAReason) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("PARITY_SPILL_DIR", "/nonexistent/spill", 1);
        SpillVector<Item> list(100000);
        list[99999].b = 3;
        const std::string line = mapping_of(list.data());
        const std::string why = spill::first_failure();
        const bool ok = list[99999].b == 3 && line.find("(deleted)") == std::string::npos &&
                        why.find("/nonexistent/spill") != std::string::npos;
        std::fprintf(stderr, "%s\n", why.c_str());
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "cannot create a spill file in /nonexistent/spill");
}

TEST(SpillAllocatorDeathTest, OffKeepsEveryListInAnonymousMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("PARITY_SPILL_DIR", "off", 1);
        SpillVector<Item> list(100000);
        const bool ok = spill::directory().empty() && spill::first_failure().empty() &&
                        mapping_of(list.data()).find("(deleted)") == std::string::npos;
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace parity
