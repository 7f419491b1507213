// fuzz/curves_harness.h — the body shared by the curve-reader harnesses: read the file with the format
// forced (parity::curves::read_curves), then what `parity curve` and `parity ranks` do with a run: compare
// it with itself and across its ranks, and write both results as JSON and CSV (names read from the input
// reach those outputs).
#pragma once

#include <string>

#include "fuzz_input.h"
#include "parity/curves.h"

namespace parity_fuzz {

inline void use_curves(const parity::curves::CurveRun& run) {
  auto cmp = parity::curves::compare_curves(run, run);
  if (cmp.ok()) {
    (void)parity::curves::curve_comparison_json(*cmp);
    (void)parity::curves::curve_comparison_csv(*cmp);
  }
  auto ranks = parity::curves::compare_ranks(run);
  if (ranks.ok()) {
    (void)parity::curves::rank_comparison_json(*ranks);
    (void)parity::curves::rank_comparison_csv(*ranks);
  }
}

inline void fuzz_curve_file(std::string_view bytes, const char* file_name, const char* format,
                            const std::string& preset = "") {
  std::filesystem::path file = fresh_dir(format) / file_name;
  write_file(file, bytes);
  parity::curves::ReadOptions options;
  options.format = format;
  options.preset = preset;
  auto run = parity::curves::read_curves(file, options);
  if (run.ok()) use_curves(*run);
}

}  // namespace parity_fuzz
