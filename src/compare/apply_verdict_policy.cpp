// apply_verdict_policy: the final verdict of every compared row, from decide_row_verdict
// (parity/verdict_policy.h), plus the one thing only a row knows: how sure its pairing is.
#include <cmath>

#include "fmt/format.h"
#include "parity/compare.h"
#include "parity/noise.h"
#include "parity/verdict_policy.h"

namespace parity {

void apply_verdict_policy(CompareResult& result, VerdictPolicy policy) {
  for (CompareRow& row : result.rows) {
    const std::string layout =
        !row.layout_note.empty() ? row.layout_note.str()
        : row.shape_differs      ? "shapes differ (" + shape_to_string(row.golden->shape) + " vs " +
                                       shape_to_string(row.target->shape) + ", same element count, compared flat)"
                                 : "";
    const std::string_view fixed_reason = row.fixed_reason();  // a span of row.reason, rewritten below
    RowVerdict v = decide_row_verdict(row.fixed_verdict, fixed_reason, row.noise, row.noise_ratio, layout, policy);
    const auto prepend = [&v](std::string prefix) {
      v.fixed_reason_at += prefix.size();
      v.reason = std::move(prefix) + v.reason;
    };
    // A pair that only order alignment put together (names differ) is weak evidence: when the pairing
    // itself is unsure, a large difference may be a wrong partner rather than a wrong result.
    if (row.match == MatchKind::kAligned && row.match_confidence < kStrongPairingConfidence && v.verdict == Verdict::kFail &&
        row.fixed_verdict != Verdict::kError) {
      v.verdict = Verdict::kWarn;
      prepend(fmt::format("paired by order alignment only (confidence {:.2f}); ", row.match_confidence));
    }
    // A difference structured beyond rounding (parity/noise.h ErrorShape) says why it fails although its
    // size may be within the rounding allowance.
    if (row.error_structured && row.metrics && v.verdict != Verdict::kPass && v.verdict != Verdict::kError) {
      const ErrorShape shape = error_shape(*row.metrics, row.golden->shape.empty() ? 1 : row.golden->shape.back());
      prepend(fmt::format("{:.0f} % of the difference lies along the golden (z = {:.1f}, {:.3g} of its norm): "
                          "a scale or offset error, not rounding; ", 100 * shape.along, shape.z, shape.along_rel));
    }
    if (row.cancelled && row.sum_cancellation > 0 && v.verdict != Verdict::kError)
      prepend(fmt::format("a sum that cancels to 1/{:.3g} of its terms' scale (from the gradient arriving at the op "
                          "that summed it and that op's other input): measured against that scale; ",
                          row.sum_cancellation));
    else if (row.cancelled && v.verdict != Verdict::kError)
      prepend("zero in exact arithmetic (cancelled below 2^-10 of the gradient it sums): measured against that "
              "gradient's scale; ");
    // A discrete decision that flipped, and the rows of the block it steers (classify_rows): shown, never a
    // failure by themselves (docs/judgement.md "Decision flips").
    if (row.flip == FlipRole::kDecision && row.metrics)
      prepend(fmt::format("a discrete decision ({}) flipped at {:.0f} of {} positions while its inputs differ by "
                          "rounding only: a tie broken the other way, not a fault; ",
                          row.golden->op.str(),
                          std::round((1.0 - row.metrics->thousandth_ratio) * static_cast<double>(row.metrics->compared)),
                          row.metrics->compared));
    else if (row.flip == FlipRole::kDecision)
      prepend(fmt::format("a discrete decision ({}) flipped while its inputs differ by rounding only: not a fault; ",
                          row.golden->op.str()));
    else if (row.flip == FlipRole::kAffected)
      prepend("in the block a flipped decision steers: judged given the flip; ");
    else if (row.flip == FlipRole::kMask)
      prepend(fmt::format("a ReLU mask flipped at {} positions whose pre-activations fall on either side of 0 within "
                          "rounding: measured outside them; ", row.mask_flips));
    // A parameter whose update since an earlier step differs beyond what its gradient explains fails
    // however small its own difference looks (docs/judgement.md "Parameters across steps").
    if (policy == VerdictPolicy::kNoiseModel && row.update && row.update->differs && v.verdict != Verdict::kError) {
      const ParameterUpdate& u = *row.update;
      v.verdict = Verdict::kFail;
      prepend(fmt::format("its update since step {} differs by {:.3g} of the update's size", u.from_step, u.rel_error) +
              (u.grad_rel_error == u.grad_rel_error
                   ? fmt::format(" while its gradient there differs by {:.3g}", u.grad_rel_error)
                   : std::string()) +
              ": the optimizer step differs; ");
    }
    row.verdict = v.verdict;
    row.fixed_reason_size = static_cast<uint32_t>(fixed_reason.size());
    row.fixed_reason_at = static_cast<uint32_t>(v.fixed_reason_at);
    row.reason = std::move(v.reason);
  }
  result.policy = policy;
  result.summary = summarize_compare(result);
}

}  // namespace parity
