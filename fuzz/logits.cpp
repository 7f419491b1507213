// fuzz/logits.cpp — libFuzzer harness: the compact logits file reader (parity::eval::open_logits_file,
// "parity.logits/1"), every token decoded, then `parity eval ppl` of the file against itself and its
// JSON/CSV outputs.
//
// Input: raw file bytes, or a first byte 'F' followed by payloads separated by kSeparator that the
// harness frames as PLG1 frames with a valid CRC32C (docs/eval.md "Crash safety"), so mutations reach the
// header and token decoding instead of stopping at a checksum mismatch. docs/fuzzing.md.
#include <cstring>

#include "fuzz_input.h"
#include "parity/dump.h"
#include "parity/eval.h"

namespace {

// [u32 magic "PLG1"][u32 payload length][u32 crc32c(length bytes || payload)][payload]
std::string plg_frame(std::string_view payload) {
  uint32_t magic = 0x31474C50u, len = static_cast<uint32_t>(payload.size());
  uint32_t crc = parity::dump::crc32c(payload.data(), payload.size(), parity::dump::crc32c(&len, 4));
  std::string out(12, '\0');
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &len, 4);
  std::memcpy(out.data() + 8, &crc, 4);
  out += payload;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = parity_fuzz::framed_if_flagged(parity_fuzz::as_view(data, size), plg_frame);
  std::filesystem::path file = parity_fuzz::fresh_dir("logits") / "logits.plg";
  parity_fuzz::write_file(file, bytes);
  auto source = parity::eval::open_logits_file(file);
  if (!source.ok()) return 0;
  const parity::eval::TokenSource& s = **source;
  (void)s.describe();
  (void)s.representation_json();
  parity::eval::TokenDist dist;
  for (int64_t i = 0; i < s.tokens(); ++i) (void)s.decode(i, dist);
  parity::eval::PplOptions options;
  options.keep_per_token = true;
  auto ppl = parity::eval::compare_ppl(s, s, options);
  if (ppl.ok()) {
    (void)parity::eval::ppl_json(*ppl);
    (void)parity::eval::ppl_tokens_csv(*ppl);
  }
  return 0;
}
