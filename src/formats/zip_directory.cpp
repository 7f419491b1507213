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

// Where the central directory is and how many entries it has.
struct CentralDirectory {
  uint64_t count = 0, size = 0, offset = 0;
};

// The EOCD record is 22 bytes plus a comment of up to 65535 bytes at the very end: scanned backwards;
// ZIP64's locator sits right before it and points at the zip64 EOCD record.
Result<CentralDirectory> find_central_directory(ByteRange f) {
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
  CentralDirectory cd{f.le(eocd + 10, 2), f.le(eocd + 12, 4), f.le(eocd + 16, 4)};
  if (cd.count == 0xFFFF || cd.size == 0xFFFFFFFF || cd.offset == 0xFFFFFFFF) {
    if (eocd < 20 || f.le(eocd - 20, 4) != kZip64LocSig) return bad("ZIP64 locator missing");
    const uint64_t z = f.le(eocd - 20 + 8, 8);
    if (!f.contains(z, 56) || f.le(z, 4) != kZip64EocdSig) return bad("ZIP64 end-of-central-directory record missing");
    cd = {f.le(z + 32, 8), f.le(z + 40, 8), f.le(z + 48, 8)};
  }
  if (!f.contains(cd.offset, cd.size)) return bad("central directory lies outside the file");
  if (cd.count > cd.size / 46)
    return bad("central directory claims " + std::to_string(cd.count) + " entries in " + std::to_string(cd.size) +
               " bytes");
  return cd;
}

// ZIP64 extended information (header id 0x0001) in the extra field [x, x_end): 8-byte values for exactly
// those of uncompressed size, compressed size and local header offset whose 32-bit field is 0xFFFFFFFF,
// in that order (APPNOTE 4.5.3).
void read_zip64_extra(ByteRange f, uint64_t x, uint64_t x_end, ZipMember& m, uint64_t& local) {
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
}

// The member's data offset from its local header, which repeats name and extra field (with possibly
// different extra lengths); a local header or data outside the file is the member's problem.
void locate_data(ByteRange f, uint64_t local, ZipMember& m) {
  if (!f.contains(local, 30) || f.le(local, 4) != kLocalSig) {
    m.problem = bad("member '" + m.name + "': local header missing at offset " + std::to_string(local));
    return;
  }
  const uint64_t data = local + 30 + f.le(local + 26, 2) + f.le(local + 28, 2);
  if (!f.contains(data, m.compressed_size))
    m.problem = bad("member '" + m.name + "': " + std::to_string(m.compressed_size) + " bytes of data at offset " +
                    std::to_string(data) + " lie outside the file (" + std::to_string(f.size) + " bytes)");
  m.data_offset = data;
}

}  // namespace

Result<std::vector<ZipMember>> read_zip_directory(ByteRange f) {
  PARITY_ASSIGN_OR_RETURN(const CentralDirectory cd, find_central_directory(f));
  std::vector<ZipMember> members;
  members.reserve(cd.count);
  uint64_t pos = cd.offset;
  const uint64_t cd_end = cd.offset + cd.size;
  for (uint64_t i = 0; i < cd.count; ++i) {
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
    read_zip64_extra(f, pos + 46 + name_len, pos + 46 + name_len + extra_len, m, local);
    pos += 46 + var;
    locate_data(f, local, m);
    members.push_back(std::move(m));
  }
  return members;
}

}  // namespace parity::formats
