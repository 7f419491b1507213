// fuzz/msprobe.cpp — libFuzzer harness: msprobe dumps. The dump.json parser and name mapping
// (parity::formats::parse_msprobe_dump_json, with construct.json), then the same texts as a dump folder
// opened as a source (format "msprobe"), every record listed and loaded.
//
// Input: dump.json, optionally followed by kSeparator and construct.json, and by kSeparator and the
// bytes of a tensor file written as dump_tensor_data/Functional.linear.0.forward.input.0.npy.
#include "fuzz_input.h"
#include "parity/formats.h"
#include "parity/open_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string_view> s = parity_fuzz::split_sections(parity_fuzz::as_view(data, size), 3);
  const std::string_view construct = s.size() > 1 ? s[1] : std::string_view();
  auto parsed = parity::formats::parse_msprobe_dump_json(s[0], construct, "dump.json");
  if (!parsed.ok()) return 0;
  std::filesystem::path dir = parity_fuzz::fresh_dir("msprobe");
  parity_fuzz::write_file(dir / "dump.json", s[0]);
  if (s.size() > 1) parity_fuzz::write_file(dir / "construct.json", s[1]);
  if (s.size() > 2) {
    std::filesystem::create_directories(dir / "dump_tensor_data");
    parity_fuzz::write_file(dir / "dump_tensor_data" / "Functional.linear.0.forward.input.0.npy", s[2]);
  }
  auto source = parity::open_source(dir, "msprobe");
  if (!source.ok()) return 0;
  for (const parity::Record& r : (*source)->records()) {
    if (!r.has_data) continue;
    auto view = (*source)->load(r);
    if (view.ok()) parity_fuzz::touch(*view);
  }
  for (const parity::Status& p : (*source)->problems()) (void)p.message();
  return 0;
}
