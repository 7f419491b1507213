// fuzz/thresholds.cpp — libFuzzer harness: the thresholds-file reader behind `--thresholds`
// (parity::apply_thresholds_json, the from-text entry load_thresholds uses), over the defaults, and the
// result written back as JSON. docs/fuzzing.md.
#include "fuzz_input.h"
#include "parity/thresholds.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parity::Thresholds th = parity::default_thresholds();
  parity::Status s = parity::apply_thresholds_json(std::string(parity_fuzz::as_view(data, size)), "fuzz.json", th);
  if (s.ok()) (void)parity::thresholds_to_json(th);
  return 0;
}
