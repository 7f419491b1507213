// PageAllocator (src/dump/page_allocator.h): a large list's pages are its own and leave the process when
// the list is freed; a small list is an ordinary heap block.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "dump/page_allocator.h"

namespace parity::dump {
namespace {

struct Item {
  uint64_t a = 0, b = 0, c = 0;  // 24 bytes, like a listing's entries
};

// mincore() fails with ENOMEM on a range that holds unmapped pages.
bool mapped(const void* p, size_t bytes) {
  std::vector<unsigned char> pages((bytes + 4095) / 4096 + 1);
  return ::mincore(const_cast<void*>(p), bytes, pages.data()) == 0;
}

TEST(PageAllocator, LargeListsReturnTheirPagesWhenFreed) {
  using List = std::vector<Item, detail::PageAllocator<Item>>;
  const size_t n = (size_t{4} << 20) / sizeof(Item);  // 4 MiB
  const void* data = nullptr;
  {
    List list;
    list.reserve(n);
    list.resize(n);  // touched
    data = list.data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)), 0u);
    EXPECT_TRUE(mapped(data, n * sizeof(Item)));
  }
  EXPECT_FALSE(mapped(data, n * sizeof(Item)));
  EXPECT_EQ(errno, ENOMEM);
}

TEST(PageAllocator, SmallListsAndCopiesBehaveAsVectors) {
  std::vector<Item, detail::PageAllocator<Item>> small(3), large(100000);
  small[2].c = 7;
  large[99999].a = 5;
  auto copy = large;
  copy.insert(copy.end(), small.begin(), small.end());
  EXPECT_EQ(copy.size(), 100003u);
  EXPECT_EQ(copy[99999].a, 5u);
  EXPECT_EQ(copy[100002].c, 7u);
}

}  // namespace
}  // namespace parity::dump
