// parity/spill.h — the large tables of a comparison (the listing's records, the rows, the events) kept in
// files on disk and mapped, rather than in the process's anonymous memory.
//
// A compare of 1,000 ranks × 1,000 events holds ~0.9 KB a row of such tables (docs/scaling.md "Memory").
// In anonymous memory every byte of it stays resident for the whole command, and a login node or a Slurm
// step with a memory limit kills the job. A list in a mapped file (MAP_SHARED) is page cache: the kernel
// writes its dirty pages back and drops them when memory runs short, and reads them in again when they
// are touched, so what the process needs resident is bounded by what the system grants, not by the
// table's size. Where memory is plentiful nothing is written: the file is unlinked, and a freed list's
// range is punched out of it, so its pages go unwritten (the kernel's writeback starts only under
// pressure or after vm.dirty_expire_centisecs, 30 s by default).
//
// Lists under kMinBytes use operator new (a mapping would cost more than they hold). Larger ones take a
// range of the process's one spill file (src/core/spill.cpp), its blocks reserved up front (fallocate),
// so that a full disk is an allocation in anonymous memory instead, never a SIGBUS on a later write;
// what went to anonymous memory and why is first_failure(), which a comparison reports as a note.
//
// The directory is PARITY_SPILL_DIR, else TMPDIR, else /var/tmp (on disk by the FHS, where /tmp is often
// tmpfs, whose pages are memory). PARITY_SPILL_DIR=off keeps every list in anonymous memory.
//
// A forked child shares the lists it inherits with its parent (shared mappings are not copied on write):
// parity's tables are written once and then read, and the child takes a spill file of its own for new ones.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace parity {

namespace spill {

inline constexpr size_t kMinBytes = size_t{64} << 10;

// Pages for `bytes` (≥ kMinBytes): a mapped spill file where one can be made, else anonymous pages;
// nullptr when neither can be had.
void* map_pages(size_t bytes) noexcept;
// Unmaps pages from map_pages.
void unmap_pages(void* pages, size_t bytes) noexcept;

// The directory spill files are made in ("" when spilling is off).
const std::string& directory();
// Why a list went to anonymous memory instead, the first time it happened ("" = never): a report's note.
std::string first_failure();

}  // namespace spill

// A std::allocator for the large tables (see above).
template <typename T>
struct SpillAllocator {
  using value_type = T;

  SpillAllocator() = default;
  template <typename U>
  SpillAllocator(const SpillAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < spill::kMinBytes) return std::allocator<T>().allocate(n);
    void* p = spill::map_pages(bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < spill::kMinBytes) std::allocator<T>().deallocate(p, n);
    else spill::unmap_pages(p, bytes);
  }
  template <typename U>
  bool operator==(const SpillAllocator<U>&) const noexcept { return true; }
};

template <typename T>
using SpillVector = std::vector<T, SpillAllocator<T>>;

}  // namespace parity
