// CRC32C (Castagnoli), the checksum of every dump frame and of checksum-mode tensors.
//
// Polynomial 0x1EDC6F41, reflected 0x82F63B78, initial value and final xor 0xFFFFFFFF (RFC 3720 §B.4,
// the iSCSI CRC). On x86-64 the SSE4.2 `crc32` instruction computes exactly this CRC 8 bytes at a time;
// elsewhere (or on CPUs without SSE4.2) a slicing-by-8 table does. We carry our own implementation
// because no Debian package provides a CRC32C library (zlib has only the IEEE CRC-32).
#include <array>
#include <cstring>

#include "parity/dump.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <nmmintrin.h>
#define PARITY_HAVE_SSE42_PATH 1
#endif

namespace parity::dump {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

// table[k][b]: CRC of byte b followed by k zero bytes (slicing-by-8, Intel's "Slicing-by-8" paper).
struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  Tables() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t c = b;
      for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? kPoly : 0u);
      t[0][b] = c;
    }
    for (int k = 1; k < 8; ++k)
      for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  }
};
const Tables& tables() {
  static const Tables tb;
  return tb;
}

uint32_t crc_table_raw(const unsigned char* p, size_t n, uint32_t c) {
  const auto& t = tables().t;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);  // little-endian hosts only; the dump format is little-endian anyway
    v ^= c;
    c = t[7][v & 0xFF] ^ t[6][(v >> 8) & 0xFF] ^ t[5][(v >> 16) & 0xFF] ^ t[4][(v >> 24) & 0xFF] ^
        t[3][(v >> 32) & 0xFF] ^ t[2][(v >> 40) & 0xFF] ^ t[1][(v >> 48) & 0xFF] ^ t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFF];
  return c;
}

#ifdef PARITY_HAVE_SSE42_PATH
__attribute__((target("sse4.2"))) uint32_t crc_hw_raw(const unsigned char* p, size_t n, uint32_t c) {
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = _mm_crc32_u64(c64, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c64);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
bool detect_hw() { return __builtin_cpu_supports("sse4.2"); }
#else
bool detect_hw() { return false; }
#endif

const bool kUseHw = detect_hw();

}  // namespace

uint32_t crc32c_table(const void* data, size_t n, uint32_t crc) {
  return ~crc_table_raw(static_cast<const unsigned char*>(data), n, ~crc);
}

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
#ifdef PARITY_HAVE_SSE42_PATH
  if (kUseHw) return ~crc_hw_raw(static_cast<const unsigned char*>(data), n, ~crc);
#endif
  return crc32c_table(data, n, crc);
}

bool crc32c_uses_hardware() { return kUseHw; }

}  // namespace parity::dump
