// decide_row_verdict: the final verdict of one compared row from all of its evidence (docs/judgement.md
// "Verdict policy"); the compare module gathers the evidence of every row (src/compare/apply_verdict_policy.cpp).
// Seed 004 §1.3: "精度不一致不等于精度差" — a difference is only a defect when it is larger than the
// precision change explains; and a difference larger than that is a defect however good its cosine looks.
#include "parity/verdict_policy.h"

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

// A reason's words in front of what it already says; the fixed reason moves with them.
void prepend(RowVerdict& v, std::string prefix) {
  v.fixed_reason_at += prefix.size();
  v.reason = std::move(prefix) + v.reason;
}

// The measurement: the fixed thresholds, then the noise model's last word (policy noise-model), then a
// layout change (never better than warn).
RowVerdict judge_measurement(const RowEvidence& e) {
  RowVerdict v{e.fixed, std::string(e.fixed_reason), 0};
  if (e.fixed != Verdict::kError && e.policy == VerdictPolicy::kNoiseModel) {
    switch (e.noise) {
      case NoiseClass::kNoise:
        v.verdict = Verdict::kPass;
        if (e.fixed == Verdict::kPass) {
          if (e.ratio > 0) v.reason += (v.reason.empty() ? "" : "; ") + std::string("within rounding noise (") + noise_ratio_text(e.ratio) + ")";
        } else {
          quote_fixed(v, "within rounding noise (" + noise_ratio_text(e.ratio) + ")", e.fixed, e.fixed_reason);
        }
        break;
      case NoiseClass::kElevated:
        v.verdict = Verdict::kWarn;
        quote_fixed(v, "above rounding noise (" + noise_ratio_text(e.ratio) + ")", e.fixed, e.fixed_reason);
        break;
      case NoiseClass::kStructural:
        v.verdict = Verdict::kFail;
        quote_fixed(v, "beyond rounding (" + noise_ratio_text(e.ratio) + ")", e.fixed, e.fixed_reason);
        break;
      case NoiseClass::kUnknown:
        break;  // nothing measured by the model: the fixed judgement stands
    }
  }
  if (!e.layout_change.empty() && v.verdict != Verdict::kError) {
    if (v.verdict == Verdict::kPass) v.verdict = Verdict::kWarn;
    v.reason = e.layout_change + "; " + v.reason;
    v.fixed_reason_at += e.layout_change.size() + 2;
  }
  return v;
}

// What the row's place in the run says about the measurement: how sure its pairing is, whether the
// difference has a shape, a cancellation it was measured against.
void weigh_context(const RowEvidence& e, RowVerdict& v) {
  if (e.weakly_paired && v.verdict == Verdict::kFail && e.fixed != Verdict::kError) {
    v.verdict = Verdict::kWarn;
    prepend(v, fmt::format("paired by order alignment only (confidence {:.2f}); ", e.match_confidence));
  }
  if (e.structure && v.verdict != Verdict::kPass && v.verdict != Verdict::kError)
    prepend(v, fmt::format("{:.0f} % of the difference lies along the golden (z = {:.1f}, {:.3g} of its norm): "
                           "a scale or offset error, not rounding; ", 100 * e.structure->along, e.structure->z,
                           e.structure->along_rel));
  if (e.cancelled && e.sum_cancellation > 0 && v.verdict != Verdict::kError)
    prepend(v, fmt::format("a sum that cancels to 1/{:.3g} of its terms' scale (from the gradient arriving at the op "
                           "that summed it and that op's other input): measured against that scale; ",
                           e.sum_cancellation));
  else if (e.cancelled && v.verdict != Verdict::kError)
    prepend(v, "zero in exact arithmetic (cancelled below 2^-10 of the gradient it sums): measured against that "
               "gradient's scale; ");
}

// A discrete decision that flipped, and the rows of the block it steers (classify_rows): shown, never a
// failure by themselves (docs/judgement.md "Decision flips").
void explain_flip(const RowEvidence& e, RowVerdict& v) {
  using Flip = RowEvidence::Flip;
  if (e.flip == Flip::kDecision && e.flipped)
    prepend(v, fmt::format("a discrete decision ({}) flipped at {:.0f} of {} positions while its inputs differ by "
                           "rounding only: a tie broken the other way, not a fault; ",
                           e.flip_op, *e.flipped, e.compared));
  else if (e.flip == Flip::kDecision)
    prepend(v, fmt::format("a discrete decision ({}) flipped while its inputs differ by rounding only: not a fault; ",
                           e.flip_op));
  else if (e.flip == Flip::kAffected)
    prepend(v, "in the block a flipped decision steers: judged given the flip; ");
  else if (e.flip == Flip::kMask)
    prepend(v, fmt::format("a ReLU mask flipped at {} positions whose pre-activations fall on either side of 0 within "
                           "rounding: measured outside them; ", e.mask_flips));
}

// A parameter whose update since an earlier step differs beyond what its gradient explains fails
// however small its own difference looks (docs/judgement.md "Parameters across steps").
void judge_update(const RowEvidence& e, RowVerdict& v) {
  if (e.policy != VerdictPolicy::kNoiseModel || !e.update_differs || v.verdict == Verdict::kError) return;
  v.verdict = Verdict::kFail;
  prepend(v, fmt::format("its update since step {} differs by {:.3g} of the update's size", e.update_from_step,
                         e.update_rel_error) +
                 (e.update_grad_rel_error == e.update_grad_rel_error
                      ? fmt::format(" while its gradient there differs by {:.3g}", e.update_grad_rel_error)
                      : std::string()) +
                 ": the optimizer step differs; ");
}

}  // namespace

RowVerdict decide_row_verdict(const RowEvidence& e) {
  RowVerdict v = judge_measurement(e);
  weigh_context(e, v);
  explain_flip(e, v);
  judge_update(e, v);
  return v;
}

}  // namespace parity
