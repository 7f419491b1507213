// decide_row_verdict / apply_verdict_policy: the final verdict of every compared row (docs/judgement.md
// "Verdict policy"). Seed 004 §1.3: "精度不一致不等于精度差" — a difference is only a defect when it is
// larger than the precision change explains; and a difference larger than that is a defect however
// good its cosine looks.
#include "parity/verdict_policy.h"

#include <cmath>

#include "fmt/format.h"

namespace parity {

namespace {

// Order-aligned pairs below this confidence cannot fail a run on their own (matching/mapping.h): any
// pair of two different ops (cost 0.5) falls below it, as does a module whose op sequences differ.
constexpr double kWeakPairing = kStrongPairingConfidence;

std::string units(double ratio) {
  if (std::isinf(ratio)) return "unbounded";
  return ratio >= 100 ? fmt::format("{:.0f} u", ratio) : fmt::format("{:.2g} u", ratio);
}

// "; fixed thresholds: fail (max abs 16 > 1)" — the other judgement, kept in the reason so that the
// user sees both when they disagree.
std::string fixed_note(Verdict fixed, const std::string& reason) {
  return fmt::format("; fixed thresholds {}: {}", verdict_name(fixed), reason);
}

}  // namespace

RowVerdict decide_row_verdict(Verdict fixed, const std::string& fixed_reason, NoiseClass noise, double ratio,
                              const std::string& layout_change, VerdictPolicy policy) {
  RowVerdict v{fixed, fixed_reason};
  if (fixed != Verdict::kError && policy == VerdictPolicy::kNoiseModel) {
    switch (noise) {
      case NoiseClass::kNoise:
        v.verdict = Verdict::kPass;
        if (fixed == Verdict::kPass) {
          if (ratio > 0) v.reason += (v.reason.empty() ? "" : "; ") + std::string("within rounding noise (") + units(ratio) + ")";
        } else {
          v.reason = "within rounding noise (" + units(ratio) + ")" + fixed_note(fixed, fixed_reason);
        }
        break;
      case NoiseClass::kElevated:
        v.verdict = Verdict::kWarn;
        v.reason = "above rounding noise (" + units(ratio) + ")" + fixed_note(fixed, fixed_reason);
        break;
      case NoiseClass::kStructural:
        v.verdict = Verdict::kFail;
        v.reason = "beyond rounding (" + units(ratio) + ")" + fixed_note(fixed, fixed_reason);
        break;
      case NoiseClass::kUnknown:
        break;  // nothing measured by the model: the fixed judgement stands
    }
  }
  if (!layout_change.empty() && v.verdict != Verdict::kError) {
    if (v.verdict == Verdict::kPass) v.verdict = Verdict::kWarn;
    v.reason = layout_change + "; " + v.reason;
  }
  return v;
}

void apply_verdict_policy(CompareResult& result, VerdictPolicy policy) {
  for (CompareRow& row : result.rows) {
    const std::string layout =
        row.shape_differs ? "shapes differ (" + shape_to_string(row.golden.shape) + " vs " +
                                shape_to_string(row.target.shape) + ", same element count, compared flat)"
                          : "";
    RowVerdict v = decide_row_verdict(row.fixed_verdict, row.fixed_reason, row.noise, row.noise_ratio, layout, policy);
    // A pair that only order alignment put together (names differ) is weak evidence: when the pairing
    // itself is unsure, a large difference may be a wrong partner rather than a wrong result.
    if (row.match == MatchKind::kAligned && row.match_confidence < kWeakPairing && v.verdict == Verdict::kFail &&
        row.fixed_verdict != Verdict::kError) {
      v.verdict = Verdict::kWarn;
      v.reason = fmt::format("paired by order alignment only (confidence {:.2f}); ", row.match_confidence) + v.reason;
    }
    row.verdict = v.verdict;
    row.reason = std::move(v.reason);
  }
  result.policy = policy;
  result.summary = summarize_compare(result);
}

}  // namespace parity
