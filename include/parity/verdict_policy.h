// parity/verdict_policy.h — the one place that decides a compared row's final verdict.
//
// A row is judged twice: by the fixed thresholds of its dtype (parity/thresholds.h: msprobe's rules and
// the seed documents' references) and by the rounding-noise model (parity/noise.h: observed error in
// units of the rounding a pure precision change would cause). The policy says which of the two has the
// last word (docs/judgement.md "Verdict policy"):
//
//   noise-model (default)  noise → pass, elevated → warn, structural → fail, whatever the fixed
//                          thresholds say; rows the model cannot measure keep the fixed verdict. A
//                          healthy bf16 run whose -1e4 mask rounds by 16 passes; a 1e-3 relative change
//                          of an fp32 tensor (16,000 u) fails although its cosine is 0.999999.
//   fixed-thresholds       the fixed thresholds alone (a business gate: "cosine ≥ 0.999 everywhere").
//
// Rows that cannot be compared (shapes, NaN/Inf positions, unreadable data) are errors under both.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "parity/thresholds.h"
#include "parity/verdict.h"

namespace parity {

// VerdictPolicy, its names and the thresholds-file "policy" key are in parity/thresholds.h.

struct RowVerdict {
  Verdict verdict = Verdict::kError;
  std::string reason;
  // Where the fixed-threshold reason stands in `reason`: every final reason quotes it whole, so a row
  // keeps it as a span of its reason rather than as a second string (CompareRow::fixed_reason).
  size_t fixed_reason_at = 0;
};

// The final verdict of one row. `fixed`/`fixed_reason` are the fixed-threshold judgement, `noise` and
// `ratio` the noise class and ratio (NoiseClass::kUnknown when the model could not measure the row),
// `layout_change` describes a same-count shape change, "" when none (never better than warn: compared
// flat, a layout change is worth a look).
RowVerdict decide_row_verdict(Verdict fixed, std::string_view fixed_reason, NoiseClass noise, double ratio,
                              const std::string& layout_change, VerdictPolicy policy);

// apply_verdict_policy (parity/compare.h) applies it to every row of a compared result.

}  // namespace parity
