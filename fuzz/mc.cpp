// fuzz/mc.cpp — libFuzzer harness: the multiple-choice reader behind `parity eval mc`
// (parity::eval::read_mc: parity.log_choices JSONL or lm-eval --log_samples JSONL), then compare_mc and
// its JSON/CSV outputs.
//
// Input: the golden file, optionally followed by kSeparator and the target file (else golden = target).
#include "fuzz_input.h"
#include "parity/eval.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string_view> s = parity_fuzz::split_sections(parity_fuzz::as_view(data, size), 2);
  std::filesystem::path dir = parity_fuzz::fresh_dir("mc");
  std::filesystem::path golden = dir / "golden.jsonl", target = dir / "target.jsonl";
  parity_fuzz::write_file(golden, s[0]);
  parity_fuzz::write_file(target, s.size() > 1 ? s[1] : s[0]);
  std::vector<parity::Status> problems;
  auto g = parity::eval::read_mc(golden, &problems);
  auto t = parity::eval::read_mc(target, &problems);
  if (!g.ok() || !t.ok()) return 0;
  parity::eval::McOptions options;
  options.bootstrap_samples = 50;  // the statistics are not what is fuzzed; keep an input fast
  for (bool normalised : {false, true}) {
    options.length_normalised = normalised;
    auto r = parity::eval::compare_mc(*g, *t, options);
    if (r.ok()) {
      (void)parity::eval::mc_json(*r);
      (void)parity::eval::mc_csv(*r);
    }
  }
  return 0;
}
