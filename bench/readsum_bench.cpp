// The practical memory-bandwidth ceiling for comparing two tensor files: memory-map both files the
// way parity's readers do (PROT_READ, MAP_SHARED; src/formats/mapped_file.cpp), and add up every
// 64-bit word of both streams, multi-threaded. Nothing can compare two files faster than it can
// read them, so compare_bench.sh reports parity's throughput as a fraction of this one.
//
//   readsum_bench GOLDEN TARGET [--threads N]
// GOLDEN/TARGET are two files, or two directories whose files are paired by relative path. Prints
//   readsum: <pairs> pairs, <bytes> input bytes, <seconds> s, checksum <x>
// where bytes counts both files of every pair. A large pair is split into 1 MiB segments shared by
// the threads; many small pairs are shared out whole.
#include <fcntl.h>
#include <omp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Mapped {
  const unsigned char* data = nullptr;
  size_t size = 0;
};

Mapped map_file(const std::string& path) {
  Mapped m;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "readsum: cannot open %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(2);
  }
  struct stat st {};
  ::fstat(fd, &st);
  m.size = static_cast<size_t>(st.st_size);
  if (m.size > 0) {
    void* p = ::mmap(nullptr, m.size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "readsum: cannot map %s: %s\n", path.c_str(), std::strerror(errno));
      std::exit(2);
    }
    m.data = static_cast<const unsigned char*>(p);
  }
  ::close(fd);
  return m;
}

void unmap(const Mapped& m) {
  if (m.data != nullptr) ::munmap(const_cast<unsigned char*>(m.data), m.size);
}

// Sum of the 64-bit words of a[0..n) and b[0..n) (n bytes each; a tail shorter than 8 bytes is added
// byte by byte). GCC vectorises the loop.
uint64_t sum_two(const unsigned char* a, const unsigned char* b, size_t n) {
  uint64_t s = 0;
  const size_t words = n / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t x, y;
    std::memcpy(&x, a + 8 * i, 8);
    std::memcpy(&y, b + 8 * i, 8);
    s += x + y;
  }
  for (size_t i = words * 8; i < n; ++i) s += a[i] + b[i];
  return s;
}

uint64_t sum_one(const unsigned char* a, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i) s += a[i];
  return s;
}

// Both streams of one pair; the longer file's excess is read alone.
uint64_t sum_pair(const Mapped& g, const Mapped& t, size_t begin, size_t end) {
  const size_t common = std::min(g.size, t.size);
  uint64_t s = 0;
  if (begin < common) s += sum_two(g.data + begin, t.data + begin, std::min(end, common) - begin);
  const Mapped& longer = g.size > t.size ? g : t;
  if (end > common) s += sum_one(longer.data + std::max(begin, common), end - std::max(begin, common));
  return s;
}

std::map<std::string, std::string> list_files(const std::string& root) {
  std::map<std::string, std::string> out;
  if (fs::is_regular_file(root)) {
    out[""] = root;
    return out;
  }
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out[fs::relative(e.path(), root).string()] = e.path().string();
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: readsum_bench GOLDEN TARGET [--threads N]\n");
    return 2;
  }
  if (argc == 5 && std::string(argv[3]) == "--threads") omp_set_num_threads(std::atoi(argv[4]));
  const auto gfiles = list_files(argv[1]), tfiles = list_files(argv[2]);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& [rel, path] : gfiles) {
    auto it = tfiles.find(rel);
    if (it != tfiles.end()) pairs.emplace_back(path, it->second);
  }
  const auto start = std::chrono::steady_clock::now();
  uint64_t checksum = 0, bytes = 0;
  constexpr size_t kSegment = size_t{1} << 20;
  if (pairs.size() == 1) {
    const Mapped g = map_file(pairs[0].first), t = map_file(pairs[0].second);
    const size_t total = std::max(g.size, t.size);
    const int64_t segments = static_cast<int64_t>((total + kSegment - 1) / kSegment);
#pragma omp parallel for schedule(dynamic, 4) reduction(+ : checksum)
    for (int64_t s = 0; s < segments; ++s) {
      const size_t b = static_cast<size_t>(s) * kSegment;
      checksum += sum_pair(g, t, b, std::min(total, b + kSegment));
    }
    bytes = g.size + t.size;
    unmap(g);
    unmap(t);
  } else {
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : checksum, bytes)
    for (int64_t i = 0; i < static_cast<int64_t>(pairs.size()); ++i) {
      const Mapped g = map_file(pairs[static_cast<size_t>(i)].first), t = map_file(pairs[static_cast<size_t>(i)].second);
      checksum += sum_pair(g, t, 0, std::max(g.size, t.size));
      bytes += g.size + t.size;
      unmap(g);
      unmap(t);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("readsum: %zu pairs, %llu input bytes, %.3f s, checksum %llx\n", pairs.size(),
              static_cast<unsigned long long>(bytes), seconds, static_cast<unsigned long long>(checksum));
  return 0;
}
