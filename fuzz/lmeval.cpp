// fuzz/lmeval.cpp — libFuzzer harness: the lm-evaluation-harness readers behind `parity eval lm-eval`
// (results JSON and --log_samples JSONL) through parity::eval::compare_lm_eval, and its JSON/CSV outputs.
//
// Input: up to four sections separated by kSeparator: results A, results B, samples A, samples B. With
// one section it is both results files; samples are passed only when present. docs/fuzzing.md.
#include "fuzz_input.h"
#include "parity/eval.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string_view> s = parity_fuzz::split_sections(parity_fuzz::as_view(data, size), 4);
  std::filesystem::path dir = parity_fuzz::fresh_dir("lmeval");
  std::filesystem::path a = dir / "results_a.json", b = dir / "results_b.json";
  parity_fuzz::write_file(a, s[0]);
  parity_fuzz::write_file(b, s.size() > 1 ? s[1] : s[0]);
  std::vector<std::filesystem::path> samples_a, samples_b;
  if (s.size() > 2) {
    samples_a.push_back(dir / "a" / "samples_arc_easy_2024-05-01T12-00-00.123456.jsonl");
    samples_b.push_back(dir / "b" / "samples_arc_easy_2024-05-01T12-00-00.123456.jsonl");
    std::filesystem::create_directories(dir / "a");
    std::filesystem::create_directories(dir / "b");
    parity_fuzz::write_file(samples_a[0], s[2]);
    parity_fuzz::write_file(samples_b[0], s.size() > 3 ? s[3] : s[2]);
  }
  parity::eval::LmEvalOptions options;
  options.mc.bootstrap_samples = 50;  // the statistics are not what is fuzzed; keep an input fast
  auto r = parity::eval::compare_lm_eval(a, b, samples_a, samples_b, options);
  if (r.ok()) {
    (void)parity::eval::lm_eval_json(*r);
    (void)parity::eval::lm_eval_csv(*r);
  }
  return 0;
}
