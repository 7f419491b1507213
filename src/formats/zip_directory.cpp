// Zip central directory reader. Every field read goes through ByteRange bounds checks.
#include "formats/zip_directory.h"

#include <string>

namespace parity::formats {
namespace {

constexpr uint32_t kEocdSig = 0x06054b50;       // end of central directory record
constexpr uint32_t kZip64LocSig = 0x07064b50;   // zip64 end of central directory locator
constexpr uint32_t kZip64EocdSig = 0x06064b50;  // zip64 end of central directory record
constexpr uint32_t kCentralSig = 0x02014b50;    // central directory file header
constexpr uint32_t kLocalSig = 0x04034b50;      // local file header

Status bad(const std::string& what) { return Status::Invalid("corrupt zip archive: " + what); }

}  // namespace

Result<std::vector<ZipMember>> read_zip_directory(ByteRange f) {
  // The EOCD record is 22 bytes plus a comment of up to 65535 bytes at the very end: scan backwards.
  if (f.size < 22) return bad("file too short (" + std::to_string(f.size) + " bytes) for a zip archive");
  uint64_t eocd = UINT64_MAX;
  const uint64_t lowest = f.size >= 22 + 65535 ? f.size - 22 - 65535 : 0;
  for (uint64_t pos = f.size - 22 + 1; pos-- > lowest;) {
    if (f.le(pos, 4) == kEocdSig && pos + 22 + f.le(pos + 20, 2) == f.size) {
      eocd = pos;
      break;
    }
  }
  if (eocd == UINT64_MAX) return bad("no end-of-central-directory record (truncated or not a zip file)");
  uint64_t count = f.le(eocd + 10, 2);
  uint64_t cd_size = f.le(eocd + 12, 4);
  uint64_t cd_offset = f.le(eocd + 16, 4);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    // ZIP64: the locator sits right before the EOCD record and points at the zip64 EOCD record.
    if (eocd < 20 || f.le(eocd - 20, 4) != kZip64LocSig) return bad("ZIP64 locator missing");
    const uint64_t z = f.le(eocd - 20 + 8, 8);
    if (!f.contains(z, 56) || f.le(z, 4) != kZip64EocdSig) return bad("ZIP64 end-of-central-directory record missing");
    count = f.le(z + 32, 8);
    cd_size = f.le(z + 40, 8);
    cd_offset = f.le(z + 48, 8);
  }
  if (!f.contains(cd_offset, cd_size)) return bad("central directory lies outside the file");
  if (count > cd_size / 46) return bad("central directory claims " + std::to_string(count) + " entries in " +
                                       std::to_string(cd_size) + " bytes");
  std::vector<ZipMember> members;
  members.reserve(count);
  uint64_t pos = cd_offset;
  const uint64_t cd_end = cd_offset + cd_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (pos + 46 > cd_end || f.le(pos, 4) != kCentralSig) return bad("central directory entry " + std::to_string(i) + " is malformed");
    ZipMember m;
    const uint64_t flags = f.le(pos + 8, 2);
    m.encrypted = (flags & 1) != 0;
    m.method = static_cast<uint16_t>(f.le(pos + 10, 2));
    m.crc32 = static_cast<uint32_t>(f.le(pos + 16, 4));
    m.compressed_size = f.le(pos + 20, 4);
    m.uncompressed_size = f.le(pos + 24, 4);
    const uint64_t name_len = f.le(pos + 28, 2), extra_len = f.le(pos + 30, 2), comment_len = f.le(pos + 32, 2);
    uint64_t local = f.le(pos + 42, 4);
    const uint64_t var = name_len + extra_len + comment_len;
    if (pos + 46 + var > cd_end) return bad("central directory entry " + std::to_string(i) + " overruns the directory");
    m.name.assign(reinterpret_cast<const char*>(f.data + pos + 46), name_len);
    // ZIP64 extended information (header id 0x0001): 8-byte values for exactly those of uncompressed size,
    // compressed size and local header offset whose 32-bit field is 0xFFFFFFFF, in that order (4.5.3).
    uint64_t x = pos + 46 + name_len;
    const uint64_t x_end = x + extra_len;
    while (x + 4 <= x_end) {
      const uint64_t id = f.le(x, 2), len = f.le(x + 2, 2);
      if (x + 4 + len > x_end) break;
      if (id == 0x0001) {
        uint64_t q = x + 4;
        auto take = [&](uint64_t& field) {
          if (field == 0xFFFFFFFF && q + 8 <= x + 4 + len) {
            field = f.le(q, 8);
            q += 8;
          }
        };
        take(m.uncompressed_size);
        take(m.compressed_size);
        take(local);
      }
      x += 4 + len;
    }
    pos += 46 + var;
    // The local header repeats name and extra field (with possibly different extra lengths); the data
    // follows it.
    if (!f.contains(local, 30) || f.le(local, 4) != kLocalSig) {
      m.problem = bad("member '" + m.name + "': local header missing at offset " + std::to_string(local));
    } else {
      const uint64_t data = local + 30 + f.le(local + 26, 2) + f.le(local + 28, 2);
      if (!f.contains(data, m.compressed_size)) {
        m.problem = bad("member '" + m.name + "': " + std::to_string(m.compressed_size) +
                        " bytes of data at offset " + std::to_string(data) + " lie outside the file (" +
                        std::to_string(f.size) + " bytes)");
      }
      m.data_offset = data;
    }
    members.push_back(std::move(m));
  }
  return members;
}

}  // namespace parity::formats
