// The "safetensors" FormatSpec, registered in registry.cpp.
#pragma once

#include "parity/source.h"

namespace parity::formats {
const FormatSpec& safetensors_format_spec();
}  // namespace parity::formats
