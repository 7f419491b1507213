// Tight per-dtype conversion loops over contiguous, native-order element arrays. Internal to
// src/numeric (tensor_decode.cpp); the loops are written so that GCC -O3 vectorises them.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace parity::detail {

// fp16 -> fp32 without branches or tables (M. Dukhan, FP16 library, fp16_ieee_to_fp32_value, MIT):
// shift the half into the top of a word; normal and inf/NaN inputs are re-biased by adding
// (127-15)+112 to the exponent then scaling by 2^-112 (so exponent 31 becomes 255: inf/NaN survive);
// a subnormal input with 10-bit mantissa m is built as the float 2^-1 * (1 + m*2^-23) = 0.5 + m*2^-24
// and then 0.5 is subtracted, leaving m*2^-24 exactly. A compare on the shifted exponent selects
// between the two. Checked against the generic decode for all 65,536 patterns (tests/numeric).
inline float f16_to_f32(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float exp_scale = 0x1.0p-112f;
  const float normalized = std::bit_cast<float>((two_w >> 4) + exp_offset) * exp_scale;
  const uint32_t magic_mask = 126u << 23;
  const float magic_bias = 0.5f;
  const float denormalized = std::bit_cast<float>((two_w >> 17) | magic_mask) - magic_bias;
  const uint32_t denormalized_cutoff = 1u << 27;
  // Select with a mask rather than ?: so that GCC if-converts and vectorises the calling loop.
  const uint32_t is_sub = 0u - static_cast<uint32_t>(two_w < denormalized_cutoff);
  const uint32_t result = sign | (std::bit_cast<uint32_t>(denormalized) & is_sub) |
                          (std::bit_cast<uint32_t>(normalized) & ~is_sub);
  return std::bit_cast<float>(result);
}

// bf16 is the top half of an fp32: widening is a 16-bit shift, exact for every pattern.
inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline uint16_t load_u16(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

}  // namespace parity::detail
