// fuzz/pt.cpp — libFuzzer harness: the restricted .pt reader (parity::open_source with format "pt"; the
// torch zip layout and the pickle opcodes torch.save emits for one tensor, no pickle code executed),
// the record listed, loaded and read element by element. docs/fuzzing.md.
#include "source_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parity_fuzz::fuzz_tensor_file(data, size, "x.pt", "pt");
  return 0;
}
