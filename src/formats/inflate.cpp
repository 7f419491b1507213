// Raw-deflate inflation and CRC-32 through zlib. Zip members are raw deflate streams (no zlib header),
// hence windowBits = -15 (zlib manual, inflateInit2). Sizes above UINT_MAX are fed in pieces because
// z_stream counts in uInt.
#include "formats/inflate.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <string>

namespace parity::formats {

Result<uint64_t> inflate_raw(const std::byte* src, uint64_t src_size, std::byte* dst, uint64_t dst_size) {
  z_stream zs{};
  if (inflateInit2(&zs, -15) != Z_OK) return Status::Internal("zlib inflateInit2 failed");
  uint64_t in_done = 0, out_done = 0;
  int rc = Z_OK;
  while (out_done < dst_size) {
    if (zs.avail_in == 0 && in_done < src_size) {
      const uint64_t n = std::min<uint64_t>(src_size - in_done, UINT_MAX);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(src + in_done));
      zs.avail_in = static_cast<uInt>(n);
      in_done += n;
    }
    const uint64_t want = std::min<uint64_t>(dst_size - out_done, UINT_MAX);
    zs.next_out = reinterpret_cast<Bytef*>(dst + out_done);
    zs.avail_out = static_cast<uInt>(want);
    rc = inflate(&zs, Z_NO_FLUSH);
    out_done += want - zs.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_done == src_size) {
      inflateEnd(&zs);
      return Status::Corrupt("deflate stream ends early (" + std::to_string(out_done) + " bytes inflated)");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string msg = zs.msg ? zs.msg : "error " + std::to_string(rc);
      inflateEnd(&zs);
      return Status::Corrupt("corrupt deflate stream: " + msg);
    }
  }
  inflateEnd(&zs);
  return out_done;
}

uint32_t crc32_continue(uint32_t crc, const std::byte* data, uint64_t size) {
  uLong c = crc;
  while (size > 0) {
    const uInt n = static_cast<uInt>(std::min<uint64_t>(size, UINT_MAX));
    c = crc32(c, reinterpret_cast<const Bytef*>(data), n);
    data += n;
    size -= n;
  }
  return static_cast<uint32_t>(c);
}

uint32_t crc32_of(const std::byte* data, uint64_t size) {
  return crc32_continue(static_cast<uint32_t>(crc32(0L, Z_NULL, 0)), data, size);
}

}  // namespace parity::formats
