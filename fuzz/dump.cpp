// fuzz/dump.cpp — libFuzzer harness: the parity capture-run reader (parity::dump::RunReader) over a run
// directory built from the input, then what every command does with a run: list, load every tensor,
// op arguments, scalars and fingerprints, the scalars as curves (read_curves "parity-run"), and an npy
// export (the writer side that consumes reader output).
//
// Input: an optional first byte 'F', then up to five sections separated by kSeparator, written as
// rank0/manifest.pfr, rank0/data-000000.bin, rank0/scalars.pfr, rank0/environment.pfr and
// rank0/data-000001.bin. Without 'F' the sections are the raw files. With 'F' each line of the manifest,
// scalars and environment sections is one JSON payload that the harness frames with a valid CRC32C
// (encode_frame), so mutations reach the record parser instead of stopping at a checksum mismatch.
#include "fuzz_input.h"
#include "parity/curves.h"
#include "parity/dump.h"

namespace {

std::string framed(std::string_view section) {
  std::string out;
  for (std::string_view line : parity_fuzz::split_lines(section))
    out += parity::dump::encode_frame(std::string(line));
  return out;
}

void read_run(const std::filesystem::path& run_dir, const std::filesystem::path& export_dir) {
  auto opened = parity::dump::RunReader::open(run_dir);
  if (!opened.ok()) return;
  const parity::dump::RunReader& run = **opened;
  (void)run.describe();
  for (const parity::Record& r : run.records()) {
    (void)run.args_json(r);
    (void)run.device(r);
    (void)run.stride(r);
    (void)run.data_location(r);
    if (!r.has_data) continue;
    auto view = run.load(r);
    if (view.ok()) parity_fuzz::touch(*view);
  }
  (void)run.parts();
  (void)run.scalars();
  (void)run.fingerprints();
  (void)run.fingerprint_json();
  (void)parity::dump::export_run(run, "npy", export_dir);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input = parity_fuzz::as_view(data, size);
  bool frame = !input.empty() && input.front() == 'F';
  if (frame) input.remove_prefix(1);
  static const char* const kFiles[] = {"manifest.pfr", "data-000000.bin", "scalars.pfr", "environment.pfr",
                                       "data-000001.bin"};
  static const bool kFramed[] = {true, false, true, true, false};
  std::filesystem::path run_dir = parity_fuzz::fresh_dir("run");
  std::filesystem::path part = run_dir / "rank0";
  std::filesystem::create_directories(part);
  std::vector<std::string_view> sections = parity_fuzz::split_sections(input, 5);
  for (size_t i = 0; i < sections.size(); ++i)
    parity_fuzz::write_file(part / kFiles[i], frame && kFramed[i] ? framed(sections[i]) : std::string(sections[i]));

  read_run(run_dir, parity_fuzz::fresh_dir("export") / "out");
  parity::curves::ReadOptions options;
  options.format = "parity-run";
  auto curves = parity::curves::read_curves(run_dir, options);
  if (curves.ok()) {
    auto cmp = parity::curves::compare_curves(*curves, *curves);
    if (cmp.ok()) (void)parity::curves::curve_comparison_json(*cmp);
  }
  return 0;
}
