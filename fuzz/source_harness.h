// fuzz/source_harness.h — the body shared by the tensor-file harnesses (npy, npz, safetensors): open the
// input as a RecordSource through open_source() with the format forced (detection is not what is
// fuzzed), list it, load every record with data and read every element.
#pragma once

#include <string>

#include "fuzz_input.h"
#include "parity/open_source.h"

namespace parity_fuzz {

inline void fuzz_tensor_file(const uint8_t* data, size_t size, const char* file_name, const char* format) {
  std::filesystem::path dir = fresh_dir(format);
  std::filesystem::path file = dir / file_name;
  write_file(file, as_view(data, size));
  auto source = parity::open_source(file, format);
  if (!source.ok()) return;
  const parity::RecordSource& s = **source;
  (void)s.describe();
  for (const parity::Record& r : s.records()) {
    if (!r.has_data) continue;
    auto view = s.load(r);
    if (view.ok()) touch(*view);
  }
  for (const parity::Status& p : s.problems()) (void)p.message();
}

}  // namespace parity_fuzz
