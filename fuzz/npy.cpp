// fuzz/npy.cpp — libFuzzer harness: the npy reader (parity::open_source with format "npy"), every
// record listed, loaded and read element by element. docs/fuzzing.md.
#include "source_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parity_fuzz::fuzz_tensor_file(data, size, "x.npy", "npy");
  return 0;
}
