// PageAllocator: an allocator for large, short-lived lists whose memory must go back to the system the
// moment they are freed.
//
// A run's parts are listed in parallel, each into lists of its own, then merged into the run's one list
// and freed. Through malloc (mimalloc keeps freed blocks in its per-thread pages) a 1,000-rank listing
// held ~0.2 GB of those freed lists for the rest of the command. Lists of at least kMinBytes get pages
// of their own (mmap) and return them on free (munmap); smaller ones use operator new, so a run of many
// tiny parts does not spend a mapping on each. A listing holds at most a few such lists a part at once
// (records, entries, data entries), far below the kernel's default limit of 65,530 mappings for any
// run of up to ~20,000 ranks; past it, mmap fails and the part is reported as unreadable, never skipped.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <memory>
#include <new>

namespace parity::dump::detail {

template <typename T>
struct PageAllocator {
  using value_type = T;
  static constexpr size_t kMinBytes = size_t{64} << 10;

  PageAllocator() = default;
  template <typename U>
  PageAllocator(const PageAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kMinBytes) return std::allocator<T>().allocate(n);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kMinBytes) std::allocator<T>().deallocate(p, n);
    else ::munmap(p, bytes);
  }
  template <typename U>
  bool operator==(const PageAllocator<U>&) const noexcept { return true; }
};

}  // namespace parity::dump::detail
