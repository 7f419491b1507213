// fuzz/map.cpp — libFuzzer harness: the name-mapping file reader behind `--map`
// (parity::matching::parse_name_map, the from-text entry load_name_map uses), then the map applied to a
// few typical record names. docs/fuzzing.md.
#include "fuzz_input.h"
#include "parity/matching.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto map = parity::matching::parse_name_map(std::string(parity_fuzz::as_view(data, size)), "fuzz.map");
  if (!map.ok()) return 0;
  for (const char* name : {"model.layers.0.mlp", "h.0.attn:forward:output:0", "lm_head.weight", ""})
    (void)map->apply(name);
  return 0;
}
