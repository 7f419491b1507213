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

#include "parity/noise.h"
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

// Everything a row's final verdict rests on, gathered by the compare module from the row
// (apply_verdict_policy, parity/compare.h): one struct, so one function decides.
struct RowEvidence {
  // The fixed-threshold judgement of the metrics (parity/thresholds.h).
  Verdict fixed = Verdict::kError;
  std::string_view fixed_reason;
  // The noise model: class and ratio (NoiseClass::kUnknown when it could not measure the row).
  NoiseClass noise = NoiseClass::kUnknown;
  double ratio = 0;
  // A same-count shape change, "" when none: compared flat, worth a look (never better than warn).
  std::string layout_change;
  // The pairing: a pair order alignment alone put together, below kStrongPairingConfidence, is weak
  // evidence — a large difference may be a wrong partner rather than a wrong result.
  bool weakly_paired = false;
  double match_confidence = 1.0;
  // A difference structured beyond rounding (ErrorShape, parity/noise.h): why it fails although its size
  // may be within the rounding allowance. Set only for rows classed structured.
  std::optional<ErrorShape> structure;
  // A backward result that cancelled: measured against the scale it was summed from (sum_cancellation =
  // ‖terms‖/‖g‖ of a broadcast sum; 0 = against the arriving gradient).
  bool cancelled = false;
  double sum_cancellation = 0;
  // A discrete decision that flipped (docs/judgement.md "Decision flips"): shown, never a failure alone.
  enum class Flip : uint8_t { kNone, kDecision, kAffected, kMask } flip = Flip::kNone;
  std::string_view flip_op;           // kDecision: the deciding op
  std::optional<double> flipped;      // kDecision: how many of `compared` positions flipped, when measured
  int64_t compared = 0;
  int64_t mask_flips = 0;             // kMask: the positions whose ReLU mask flipped
  // A parameter whose update since an earlier step differs beyond what its gradient explains
  // (docs/judgement.md "Parameters across steps"): fails however small its own difference.
  bool update_differs = false;
  int64_t update_from_step = -1;
  double update_rel_error = 0, update_grad_rel_error = 0;  // NaN grad: not compared
  VerdictPolicy policy = VerdictPolicy::kNoiseModel;
};

// The final verdict of one row and its reason, from all of its evidence (docs/judgement.md "Verdict
// policy"). The one place a row's verdict is decided.
RowVerdict decide_row_verdict(const RowEvidence& evidence);

}  // namespace parity
