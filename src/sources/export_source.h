// The output directory of `parity export` read back as the run it came from (export_source.cpp).
#pragma once

#include "parity/source.h"

namespace parity::sources {

// "parity-export": a directory whose index.json has schema parity.export/2 (docs/dump-format.md
// "parity export"). Its records carry the name, rank, step, order and event identity the index gives,
// so `parity compare RUN EXPORTED` pairs every record; the bytes are read from the .npy /
// .safetensors files the index names.
const FormatSpec& export_format_spec();

}  // namespace parity::sources
