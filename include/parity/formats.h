// parity/formats.h — the tensor file formats of src/formats, one FormatSpec each.
//
// Each format reads one kind of file as a RecordSource (parity/source.h). They are listed, in probe
// order and together with the capture-run format of src/dump, by registered_formats()
// (parity/open_source.h, src/sources/registry.cpp). Naming rules and limits: docs/formats.md.
#pragma once

#include "parity/source.h"

namespace parity::formats {

const FormatSpec& npy_format_spec();          // "npy": one tensor per file (src/formats/npy.cpp)
const FormatSpec& npz_format_spec();          // "npz": zip archives of .npy members (npz.cpp)
const FormatSpec& safetensors_format_spec();  // "safetensors" (safetensors.cpp)

}  // namespace parity::formats
