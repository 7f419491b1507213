// decide_row_verdict: the final verdict of one compared row (docs/judgement.md "Verdict policy"); the
// compare module applies it to every row (src/compare/apply_verdict_policy.cpp).
// Seed 004 §1.3: "精度不一致不等于精度差" — a difference is only a defect when it is larger than the
// precision change explains; and a difference larger than that is a defect however good its cosine looks.
#include "parity/verdict_policy.h"

#include "parity/noise.h"

#include <cmath>

#include "fmt/format.h"

namespace parity {

namespace {

// `head` + "; fixed thresholds fail: max abs 16 > 1" — the other judgement, kept in the reason so that
// the user sees both when they disagree — and where the fixed reason starts in it.
void quote_fixed(RowVerdict& v, std::string head, Verdict fixed, std::string_view fixed_reason) {
  head += fmt::format("; fixed thresholds {}: ", verdict_name(fixed));
  v.fixed_reason_at = head.size();
  v.reason = std::move(head);
  v.reason += fixed_reason;
}

}  // namespace

RowVerdict decide_row_verdict(Verdict fixed, std::string_view fixed_reason, NoiseClass noise, double ratio,
                              const std::string& layout_change, VerdictPolicy policy) {
  RowVerdict v{fixed, std::string(fixed_reason), 0};
  if (fixed != Verdict::kError && policy == VerdictPolicy::kNoiseModel) {
    switch (noise) {
      case NoiseClass::kNoise:
        v.verdict = Verdict::kPass;
        if (fixed == Verdict::kPass) {
          if (ratio > 0) v.reason += (v.reason.empty() ? "" : "; ") + std::string("within rounding noise (") + noise_ratio_text(ratio) + ")";
        } else {
          quote_fixed(v, "within rounding noise (" + noise_ratio_text(ratio) + ")", fixed, fixed_reason);
        }
        break;
      case NoiseClass::kElevated:
        v.verdict = Verdict::kWarn;
        quote_fixed(v, "above rounding noise (" + noise_ratio_text(ratio) + ")", fixed, fixed_reason);
        break;
      case NoiseClass::kStructural:
        v.verdict = Verdict::kFail;
        quote_fixed(v, "beyond rounding (" + noise_ratio_text(ratio) + ")", fixed, fixed_reason);
        break;
      case NoiseClass::kUnknown:
        break;  // nothing measured by the model: the fixed judgement stands
    }
  }
  if (!layout_change.empty() && v.verdict != Verdict::kError) {
    if (v.verdict == Verdict::kPass) v.verdict = Verdict::kWarn;
    v.reason = layout_change + "; " + v.reason;
    v.fixed_reason_at += layout_change.size() + 2;
  }
  return v;
}

}  // namespace parity
