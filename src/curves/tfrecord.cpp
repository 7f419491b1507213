// src/curves/tfrecord.cpp — TFRecord framing, the container of TensorBoard event files:
//   uint64 length (little-endian) | uint32 masked_crc32c(length bytes) | data[length] | uint32 masked_crc32c(data)
// with masked_crc32c(x) = ((crc >> 15) | (crc << 17)) + 0xa282ead8 (tensorflow/core/lib/hash/crc32c.h:
// masking makes a CRC of data that itself contains CRCs well behaved). The CRC32C itself is the dump
// module's (Castagnoli, same as TensorFlow's).
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "curves/readers.h"
#include "parity/dump.h"

namespace parity::curves::detail {

uint32_t tfrecord_masked_crc(const void* data, size_t n) {
  uint32_t crc = dump::crc32c(data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord_frame(const std::string& payload) {
  std::string out;
  uint64_t len = payload.size();
  char len_bytes[8];
  std::memcpy(len_bytes, &len, 8);  // little-endian hosts only (x86-64, aarch64)
  uint32_t len_crc = tfrecord_masked_crc(len_bytes, 8);
  uint32_t data_crc = tfrecord_masked_crc(payload.data(), payload.size());
  out.append(len_bytes, 8);
  out.append(reinterpret_cast<const char*>(&len_crc), 4);
  out.append(payload);
  out.append(reinterpret_cast<const char*>(&data_crc), 4);
  return out;
}

Result<TfRecordScan> scan_tfrecords(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::IOError(fmt::format("{}: cannot open", file.string()));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TfRecordScan scan;
  size_t pos = 0;
  // A single record larger than this is a corrupt length, not an event (events are small protos).
  constexpr uint64_t kMaxRecord = 1ull << 30;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < 12) {
      scan.tail_problem = fmt::format("torn record header at byte {} ({} trailing bytes)", pos, bytes.size() - pos);
      break;
    }
    uint64_t len;
    uint32_t len_crc;
    std::memcpy(&len, bytes.data() + pos, 8);
    std::memcpy(&len_crc, bytes.data() + pos + 8, 4);
    if (tfrecord_masked_crc(bytes.data() + pos, 8) != len_crc) {
      scan.tail_problem = fmt::format("length checksum mismatch at byte {}", pos);
      break;
    }
    if (len > kMaxRecord) {
      scan.tail_problem = fmt::format("implausible record length {} at byte {}", len, pos);
      break;
    }
    if (bytes.size() - pos - 12 < len + 4) {
      scan.tail_problem = fmt::format("torn record at byte {} (needs {} bytes, {} left)", pos, len + 16,
                                      bytes.size() - pos);
      break;
    }
    uint32_t data_crc;
    std::memcpy(&data_crc, bytes.data() + pos + 12 + len, 4);
    if (tfrecord_masked_crc(bytes.data() + pos + 12, len) != data_crc) {
      scan.tail_problem = fmt::format("data checksum mismatch in record at byte {}", pos);
      break;
    }
    scan.records.emplace_back(bytes.data() + pos + 12, len);
    pos += 12 + len + 4;
  }
  return scan;
}

}  // namespace parity::curves::detail
