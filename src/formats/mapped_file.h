// A read-only memory mapping of a whole file, released (munmap) when the last shared_ptr owner goes.
// Tensor views keep the mapping alive through TensorView::owner, so the bytes stay valid for as long
// as anyone looks at them and no tensor data is ever copied out of a file just to be read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "parity/status.h"

namespace parity::formats {

class MappedFile {
 public:
  // Maps `path` read-only. Errors (IOError) name the path: missing, a directory, not a regular file,
  // permission denied, mmap failure. An empty file maps to data() == nullptr, size() == 0.
  static Result<std::shared_ptr<const MappedFile>> open(const std::filesystem::path& path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  MappedFile(std::filesystem::path path, const std::byte* data, uint64_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  uint64_t size_ = 0;
};

// Bounds-checked little-endian loads from a byte range: every parser reads through these, so a lying
// header can at worst produce an error, never an out-of-bounds read.
struct ByteRange {
  const std::byte* data = nullptr;
  uint64_t size = 0;

  // True when [offset, offset + n) lies inside the range (overflow-safe).
  bool contains(uint64_t offset, uint64_t n) const { return offset <= size && n <= size - offset; }
  uint64_t le(uint64_t offset, int bytes) const {  // caller checked contains(offset, bytes)
    uint64_t v = 0;
    for (int i = bytes; i-- > 0;) v = (v << 8) | static_cast<uint8_t>(data[offset + i]);
    return v;
  }
};

}  // namespace parity::formats
