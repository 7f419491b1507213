// The spill file of the large tables (parity/spill.h).
//
// One file a process, never linked into the directory. Each list takes a fresh range of it (offsets only
// grow; ext4 files reach 16 TiB), its blocks reserved (fallocate) and its pages mapped shared. Freeing a
// list unmaps its range and punches it out of the file, which returns the range's page cache and blocks.
// One file rather than one per list: a 1,000-rank listing makes ~2,000 lists, and creating as many
// inodes cost ~4 % of the command in ext4's inode allocator.
#include "parity/spill.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace parity::spill {
namespace {

#ifdef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kPopulateWrite = 23;  // Linux 5.14's value, where the C library's headers predate it
#endif

std::string choose_directory() {
  if (const char* v = std::getenv("PARITY_SPILL_DIR"); v != nullptr && *v != '\0')
    return std::strcmp(v, "off") == 0 ? "" : v;
  if (const char* v = std::getenv("TMPDIR"); v != nullptr && *v != '\0') return v;
  return "/var/tmp";
}

struct SpillFile {
  std::mutex mu;
  int fd = -1;
  bool opened = false;       // the file was tried (fd < 0: it could not be made)
  uint64_t end = 0;          // the next free offset
  std::unordered_map<uintptr_t, uint64_t> offset_of;  // a mapped list's address → its range's offset
  std::string failure;       // the first reason a list went to anonymous memory
};

SpillFile& spill_file() {
  static SpillFile* file = [] {
    auto* f = new SpillFile;  // never destroyed: lists may be freed by static destructors
    // A forked child shares the parent's file and offsets: it makes a file of its own for new lists
    // (the lists it inherited stay shared with the parent: parity writes a table once, then reads it).
    // The lock is held across fork, so that no other thread holds it in the child.
    ::pthread_atfork([] { spill_file().mu.lock(); }, [] { spill_file().mu.unlock(); }, [] {
      SpillFile& c = spill_file();
      c.mu.unlock();
      if (c.fd >= 0) ::close(c.fd);
      c.fd = -1;
      c.opened = false;
      c.end = 0;
      c.offset_of.clear();
    });
    return f;
  }();
  return *file;
}

// `bytes` rounded up to whole pages: ranges of the file start on page boundaries.
uint64_t whole_pages(size_t bytes) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// Returns a range's page cache and blocks to the system.
void punch_out(int fd, uint64_t offset, uint64_t size) {
  ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset), static_cast<off_t>(size));
}

void note_failure(SpillFile& f, const char* what, int err) {
  if (f.failure.empty()) f.failure = std::string(what) + " in " + directory() + ": " + std::strerror(err);
}

// The file nobody else can reach: O_TMPFILE where the file system has it, else a named file unlinked at
// once. Caller holds f.mu.
void open_spill_file(SpillFile& f) {
  f.opened = true;
  const std::string& dir = directory();
  if (dir.empty()) return;
  f.fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
  if (f.fd < 0) {
    std::string name = dir + "/parity-spill-XXXXXX";
    f.fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (f.fd < 0) return note_failure(f, "cannot create a spill file", errno);
    ::unlink(name.c_str());
  }
}

// A mapped range of the spill file for `bytes`, its blocks reserved; nullptr when it cannot be had.
void* map_spill_range(size_t bytes) {
  SpillFile& f = spill_file();
  const uint64_t size = whole_pages(bytes);
  std::lock_guard<std::mutex> lock(f.mu);
  if (!f.opened) open_spill_file(f);
  if (f.fd < 0) return nullptr;
  const uint64_t offset = f.end;
  // posix_fallocate returns the error (it does not set errno); without reserved blocks a write to a page
  // on a full disk would be a SIGBUS, so no reservation, no spill.
  if (const int err = ::posix_fallocate(f.fd, static_cast<off_t>(offset), static_cast<off_t>(size)); err != 0) {
    note_failure(f, "cannot reserve spill file blocks", err);
    punch_out(f.fd, offset, size);
    return nullptr;
  }
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) {
    note_failure(f, "cannot map the spill file", errno);
    punch_out(f.fd, offset, size);
    return nullptr;
  }
  f.end = offset + size;
  f.offset_of.emplace(reinterpret_cast<uintptr_t>(p), offset);
  // Faulted in one call: first writes to the pages of a reserved (unwritten) extent, one fault at a time,
  // cost ~4x the system time (ext4, 3 × 512 MiB: 1.44 s against 0.35 s; anonymous pages 0.60 s). A
  // kernel before 5.14 refuses it, and the pages fault in as they are touched. Without readahead while
  // it runs: readahead in large folios zeroed up to 2 MiB around every small list (~4 GB of memset for
  // a 1,000-rank listing). With it afterwards: a page dropped under pressure is read back with its
  // neighbours (one 4 KiB read a fault made a run in a 256 MiB cgroup ~10x slower).
  ::madvise(p, size, MADV_RANDOM);
  ::madvise(p, size, kPopulateWrite);
  ::madvise(p, size, MADV_NORMAL);
  return p;
}

}  // namespace

const std::string& directory() {
  static const std::string dir = choose_directory();
  return dir;
}

std::string first_failure() {
  SpillFile& f = spill_file();
  std::lock_guard<std::mutex> lock(f.mu);
  return f.failure;
}

void* map_pages(size_t bytes) noexcept {
  if (void* p = map_spill_range(bytes)) return p;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void unmap_pages(void* pages, size_t bytes) noexcept {
  SpillFile& f = spill_file();
  const uint64_t size = whole_pages(bytes);
  ::munmap(pages, size);
  std::lock_guard<std::mutex> lock(f.mu);
  const auto it = f.offset_of.find(reinterpret_cast<uintptr_t>(pages));
  if (it == f.offset_of.end()) return;  // anonymous (or inherited from the parent before a fork)
  punch_out(f.fd, it->second, size);
  f.offset_of.erase(it);
}

}  // namespace parity::spill
