// Reading the central directory of a zip archive (PKWARE APPNOTE.TXT 6.3.x, sections 4.3.12-4.3.16,
// 4.5.3 for ZIP64), enough to locate each member's bytes inside a mapped file.
//
// Why not libzip: libzip has no public call that gives a member's data offset, and stored .npz members
// are viewed in place inside the mapping, never copied. Deflated members are inflated with zlib.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/mapped_file.h"
#include "parity/status.h"

namespace parity::formats {

struct ZipMember {
  std::string name;
  uint16_t method = 0;        // 0 = stored, 8 = deflated
  bool encrypted = false;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t data_offset = 0;   // first byte of the member's (compressed) data in the file
  Status problem;             // not OK: this member's local header is unusable (others may be fine)
};

// Parses the end-of-central-directory record (ZIP64 aware), the central directory and each member's
// local header. Errors that make the archive unreadable are returned; a member whose own local header
// or data range is bad carries it in `problem`. Messages do not name the file.
Result<std::vector<ZipMember>> read_zip_directory(ByteRange file);

}  // namespace parity::formats
