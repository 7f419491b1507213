// parity/number_text.h — how human-readable output (terminal tables, verdict reasons, the curve summary)
// spells a number that has no value: "n/a". A NaN there is a cosine of a single element, a ratio the
// noise model could not measure, a final loss a run never logged — undefined or not measured, not a
// number the user should read as one. Machine outputs keep their documented encodings: JSON "NaN"
// (parity/json_number.h), CSV "nan" (parity/csv_cell.h, what pandas writes).
#pragma once

#include <string_view>

namespace parity {

inline constexpr std::string_view kNoValueText = "n/a";

}  // namespace parity
