// The RecordSource behind every single tensor file (.npy, .npz, .safetensors): a format contributes
// only a listing function that reads the headers of one mapped file into TensorEntry records; this
// class turns them into Records and maps (or inflates) the bytes on load.
//
// Listing maps the file, reads the headers and drops the mapping again, so a directory of 20,000 files
// holds no mappings; load() maps the file again (shared with other loads of the same file while any
// of their views is alive).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "formats/mapped_file.h"
#include "parity/source.h"

namespace parity::formats {

// Where one tensor's bytes are and how to view them.
struct TensorEntry {
  std::string key;   // archive member / safetensors key; "" for single-tensor files
  std::string what;  // the tensor in messages: "a.npz: member 'x.npy'"
  DType dtype = DType::kF32;
  Shape shape;
  std::vector<int64_t> strides;  // empty = C order
  bool byteswapped = false;
  int64_t numel = 0;

  enum class Storage : uint8_t { kInPlace, kDeflated };
  Storage storage = Storage::kInPlace;
  uint64_t offset = 0;         // in place: first data byte in the file; deflated: first compressed byte
  uint64_t size = 0;           // in place: data bytes; deflated: compressed bytes
  uint64_t inflated_size = 0;  // deflated: the member's size after inflation
  uint32_t crc32 = 0;          // an archive member's CRC-32 from the zip directory
  uint64_t data_offset = 0;    // deflated: first data byte inside the inflated member
  // In place inside a zip archive: the stored member's bytes [crc_offset, +crc_size), header included,
  // whose CRC-32 must be `crc32` (crc_size 0: not an archive member, nothing to check).
  uint64_t crc_offset = 0, crc_size = 0;
};

// Lists the tensors of one mapped file. A problem that makes the whole file unusable is returned (the
// message names the file); a problem with one tensor of an archive goes to `problems` and the other
// tensors are still listed.
using ListFn = Status (*)(const MappedFile& file, std::vector<TensorEntry>& entries, std::vector<Status>& problems);

class TensorFileSource final : public RecordSource {
 public:
  // Maps and lists `path`; fails when the file cannot be read at all or its listing fails.
  static Result<std::unique_ptr<RecordSource>> open(const std::filesystem::path& path, const char* format,
                                                    ListFn list, bool one_tensor_per_file);

  std::string describe() const override { return path_.string() + " (" + format_ + ")"; }
  const RecordList& records() const override { return records_; }
  Result<TensorView> load(const Record& r) const override;
  const std::vector<Status>& problems() const override { return problems_; }

 private:
  TensorFileSource(std::filesystem::path path, std::string format) : path_(std::move(path)), format_(std::move(format)) {}
  Result<std::shared_ptr<const MappedFile>> mapping() const;

  std::filesystem::path path_;
  std::string format_;
  uint64_t listed_size_ = 0;
  std::vector<TensorEntry> entries_;  // entries_[records_[i].handle]
  RecordList records_;
  std::vector<Status> problems_;
  mutable std::mutex mu_;
  mutable std::weak_ptr<const MappedFile> map_;
};

}  // namespace parity::formats
