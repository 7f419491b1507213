// src/eval/logits_format.h — internal: the byte layout of "parity.logits/1" (docs/eval.md
// "Representation", "Crash safety").
//   frame   = [u32 magic "PLG1"][u32 payload length][u32 crc32c(length bytes ‖ payload)][payload]
//   payload = header (24 bytes) + tokens × token block
//   header  = u32 version (1) | u32 tokens | u32 vocab | u16 top_k | u8 tail_bits |
//             u8 source dtype (0 = unknown, else 1 + parity::DType of the logits as produced) | i64 step
//   token   = i32 label | u8 flags | 3 × u8 0 | f64 log p(label) | f64 tail lo | f64 tail step η |
//             top_k × i32 id | top_k × f64 log-prob | (vocab − top_k) × tail code (u8 or u16, id order)
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "parity/dump.h"

namespace parity::eval::detail {

inline constexpr uint32_t kLogitsMagic = 0x31474C50;  // 'P','L','G','1' little-endian
inline constexpr uint32_t kLogitsVersion = 1;
inline constexpr size_t kFrameOverhead = 12;
inline constexpr size_t kFrameHeaderPayloadBytes = 24;
inline constexpr size_t kTokenFixedBytes = 32;
inline constexpr uint8_t kTokenNonFinite = 1;  // the logits held NaN/+Inf: every value decodes to NaN
inline constexpr uint32_t kMaxPayload = 1u << 30;

struct FrameHeader {
  uint32_t version = kLogitsVersion;
  uint32_t tokens = 0;
  uint32_t vocab = 0;
  uint16_t top_k = 0;
  uint8_t tail_bits = 16;
  uint8_t source_dtype = 0;  // 0 = unknown, else 1 + static_cast<int>(parity::DType)
  int64_t step = -1;
};

size_t token_block_bytes(const FrameHeader& h);

inline void write_header(const FrameHeader& h, char* p) {
  std::memcpy(p, &h.version, 4);
  std::memcpy(p + 4, &h.tokens, 4);
  std::memcpy(p + 8, &h.vocab, 4);
  std::memcpy(p + 12, &h.top_k, 2);
  p[14] = static_cast<char>(h.tail_bits);
  p[15] = static_cast<char>(h.source_dtype);
  std::memcpy(p + 16, &h.step, 8);
}

inline bool read_header(const char* p, uint32_t len, FrameHeader& h, std::string& problem) {
  if (len < kFrameHeaderPayloadBytes) { problem = "payload shorter than its header"; return false; }
  std::memcpy(&h.version, p, 4);
  std::memcpy(&h.tokens, p + 4, 4);
  std::memcpy(&h.vocab, p + 8, 4);
  std::memcpy(&h.top_k, p + 12, 2);
  h.tail_bits = static_cast<uint8_t>(p[14]);
  h.source_dtype = static_cast<uint8_t>(p[15]);
  std::memcpy(&h.step, p + 16, 8);
  if (h.version != kLogitsVersion) { problem = "unsupported version " + std::to_string(h.version); return false; }
  if (h.vocab == 0 || h.top_k == 0 || h.top_k > h.vocab || (h.tail_bits != 8 && h.tail_bits != 16)) {
    problem = "inconsistent header (vocab " + std::to_string(h.vocab) + ", top_k " + std::to_string(h.top_k) +
              ", tail bits " + std::to_string(h.tail_bits) + ")";
    return false;
  }
  if (kFrameHeaderPayloadBytes + static_cast<uint64_t>(h.tokens) * token_block_bytes(h) != len) {
    problem = "payload length does not match its token count";
    return false;
  }
  return true;
}

inline std::string frame_bytes(const std::string& payload) {
  std::string out(kFrameOverhead, '\0');
  uint32_t magic = kLogitsMagic, len = static_cast<uint32_t>(payload.size());
  uint32_t crc = dump::crc32c(&len, 4);
  crc = dump::crc32c(payload.data(), payload.size(), crc);
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &len, 4);
  std::memcpy(out.data() + 8, &crc, 4);
  out += payload;
  return out;
}

// Validates the frame at `pos`; on success points `payload` at it. On failure says why (torn tail,
// wrong magic, checksum mismatch) with the byte offset.
inline bool check_frame(const char* bytes, size_t size, size_t pos, const char*& payload, uint32_t& len,
                        std::string& problem) {
  if (size - pos < kFrameOverhead) {
    problem = "torn frame header at byte " + std::to_string(pos);
    return false;
  }
  uint32_t magic, crc;
  std::memcpy(&magic, bytes + pos, 4);
  std::memcpy(&len, bytes + pos + 4, 4);
  std::memcpy(&crc, bytes + pos + 8, 4);
  if (magic != kLogitsMagic) { problem = "not a parity.logits frame at byte " + std::to_string(pos); return false; }
  if (len > kMaxPayload || size - pos - kFrameOverhead < len) {
    problem = "torn frame at byte " + std::to_string(pos) + " (" + std::to_string(len) + " payload bytes announced, " +
              std::to_string(size - pos - kFrameOverhead) + " present)";
    return false;
  }
  uint32_t actual = dump::crc32c(&len, 4);
  actual = dump::crc32c(bytes + pos + kFrameOverhead, len, actual);
  if (actual != crc) { problem = "checksum mismatch in frame at byte " + std::to_string(pos); return false; }
  payload = bytes + pos + kFrameOverhead;
  return true;
}

}  // namespace parity::eval::detail
