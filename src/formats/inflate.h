// Raw DEFLATE (RFC 1951) decompression of zip members with zlib, from mapped bytes into a buffer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "parity/status.h"

namespace parity::formats {

// Inflates the raw deflate stream `src[0, src_size)` into `dst[0, dst_size)`, stopping when `dst` is
// full or the stream ends. Returns the number of bytes written. Errors: corrupt stream (Corrupt).
Result<uint64_t> inflate_raw(const std::byte* src, uint64_t src_size, std::byte* dst, uint64_t dst_size);

// zlib's CRC-32 (the zip checksum) of a buffer.
uint32_t crc32_of(const std::byte* data, uint64_t size);
// The CRC-32 of a buffer that follows the bytes whose CRC-32 is `crc` (crc32_of(nullptr, 0) starts one).
uint32_t crc32_continue(uint32_t crc, const std::byte* data, uint64_t size);

}  // namespace parity::formats
