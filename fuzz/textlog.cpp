// fuzz/textlog.cpp — libFuzzer harness: the text-log curve reader (format "text") with the Megatron-LM
// preset (first byte 'M'), the DeepSpeed preset ('D') or both tried (anything else), then the curve and
// rank comparisons and their outputs. docs/fuzzing.md.
#include "curves_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input = parity_fuzz::as_view(data, size);
  std::string preset;
  if (!input.empty() && (input.front() == 'M' || input.front() == 'D')) {
    preset = input.front() == 'M' ? "megatron" : "deepspeed";
    input.remove_prefix(1);
  }
  parity_fuzz::fuzz_curve_file(input, "train.log", "text", preset);
  return 0;
}
