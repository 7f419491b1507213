// apply_verdict_policy: the final verdict of every compared row, from decide_row_verdict
// (parity/verdict_policy.h), plus the one thing only a row knows: how sure its pairing is.
#include "fmt/format.h"
#include "parity/compare.h"
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
