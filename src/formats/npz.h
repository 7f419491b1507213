// The "npz" FormatSpec (zip archives of .npy members), registered in registry.cpp.
#pragma once

#include "parity/source.h"

namespace parity::formats {
const FormatSpec& npz_format_spec();
}  // namespace parity::formats
