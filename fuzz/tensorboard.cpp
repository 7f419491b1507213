// fuzz/tensorboard.cpp — libFuzzer harness: the TensorBoard event-file curve reader (format
// "tensorboard": TFRecord framing, Event protos), then the curve and rank comparisons and their outputs.
//
// Input: raw file bytes, or a first byte 'F' followed by Event payloads separated by kSeparator that the
// harness frames as TFRecord records with valid masked CRC32Cs, so mutations reach the proto decoder and
// the summary handling instead of stopping at a checksum mismatch. docs/fuzzing.md.
#include <cstring>

#include "curves_harness.h"
#include "parity/dump.h"

namespace {

// TFRecord's masked CRC32C: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc(const void* p, size_t n) {
  uint32_t crc = parity::dump::crc32c(p, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// [u64 length][u32 masked crc of length][data][u32 masked crc of data]
std::string tfrecord(std::string_view payload) {
  uint64_t len = payload.size();
  uint32_t len_crc = masked_crc(&len, 8), data_crc = masked_crc(payload.data(), payload.size());
  std::string out(12, '\0');
  std::memcpy(out.data(), &len, 8);
  std::memcpy(out.data() + 8, &len_crc, 4);
  out += payload;
  out.append(reinterpret_cast<const char*>(&data_crc), 4);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = parity_fuzz::framed_if_flagged(parity_fuzz::as_view(data, size), tfrecord);
  parity_fuzz::fuzz_curve_file(bytes, "events.out.tfevents.1.fuzz", "tensorboard");
  return 0;
}
