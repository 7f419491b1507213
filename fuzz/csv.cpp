// fuzz/csv.cpp — libFuzzer harness: the curve reader for format "csv" (parity::curves::read_curves),
// then the curve and rank comparisons and their JSON/CSV outputs. docs/fuzzing.md.
#include "curves_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parity_fuzz::fuzz_curve_file(parity_fuzz::as_view(data, size), "run.csv", "csv");
  return 0;
}
