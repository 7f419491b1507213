// Frames: every append-only file of a dump is a sequence of
//   [u32 magic "PFR1"][u32 payload length][u32 crc32c(length bytes || payload)][payload]
// (little-endian). The checksum covers the length so a torn or overwritten length is detected before it
// is trusted. A reader stops at the first frame that is incomplete or fails its checksum and reports
// where — the tail a crash leaves — without discarding anything before it (docs/dump-format.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "parity/dump.h"
#include "parity/regular_file.h"

namespace parity::dump {
namespace {
void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
uint32_t get_u32(const unsigned char* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
}  // namespace

std::string encode_frame(const std::string& payload) {
  std::string out;
  out.reserve(kFrameHeaderBytes + payload.size());
  const uint32_t len = static_cast<uint32_t>(payload.size());
  put_u32(out, kFrameMagic);
  put_u32(out, len);
  unsigned char lenb[4] = {static_cast<unsigned char>(len & 0xFF), static_cast<unsigned char>((len >> 8) & 0xFF),
                           static_cast<unsigned char>((len >> 16) & 0xFF), static_cast<unsigned char>(len >> 24)};
  put_u32(out, crc32c(payload.data(), payload.size(), crc32c(lenb, 4)));
  out += payload;
  return out;
}

Result<FrameScan> scan_frames(const std::filesystem::path& file) {
  PARITY_ASSIGN_OR_RETURN(const RegularFile f, open_regular_file(file));  // never opens a FIFO
  const int fd = f.fd;
  std::string bytes(static_cast<size_t>(f.size), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t r = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  bytes.resize(got);

  FrameScan scan;
  scan.file_bytes = got;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t pos = 0;
  while (pos < got) {
    if (got - pos < kFrameHeaderBytes) {
      scan.tail_problem = fmt::format("torn record at byte {}: {} bytes of a 12-byte frame header", pos, got - pos);
      break;
    }
    const uint32_t magic = get_u32(p + pos), len = get_u32(p + pos + 4), crc = get_u32(p + pos + 8);
    if (magic != kFrameMagic) {
      scan.tail_problem = fmt::format("corrupt record at byte {}: bad frame magic 0x{:08x}", pos, magic);
      break;
    }
    if (len > kMaxFramePayload) {
      scan.tail_problem = fmt::format("corrupt record at byte {}: frame length {} exceeds the limit", pos, len);
      break;
    }
    if (got - pos - kFrameHeaderBytes < len) {
      scan.tail_problem = fmt::format("torn record at byte {}: frame claims {} payload bytes, file has {}", pos,
                                      len, got - pos - kFrameHeaderBytes);
      break;
    }
    const uint32_t actual = crc32c(p + pos + kFrameHeaderBytes, len, crc32c(p + pos + 4, 4));
    if (actual != crc) {
      scan.tail_problem = fmt::format("corrupt record at byte {}: crc32c 0x{:08x}, frame says 0x{:08x}", pos,
                                      actual, crc);
      break;
    }
    scan.payloads.emplace_back(bytes.data() + pos + kFrameHeaderBytes, len);
    pos += kFrameHeaderBytes + len;
    scan.valid_bytes = pos;
  }
  return scan;
}

}  // namespace parity::dump
