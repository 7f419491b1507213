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
    RowVerdict v = decide_row_verdict(row.fixed_verdict, row.fixed_reason, row.noise, row.noise_ratio, layout, policy);
    // A pair that only order alignment put together (names differ) is weak evidence: when the pairing
    // itself is unsure, a large difference may be a wrong partner rather than a wrong result.
    if (row.match == MatchKind::kAligned && row.match_confidence < kStrongPairingConfidence && v.verdict == Verdict::kFail &&
        row.fixed_verdict != Verdict::kError) {
      v.verdict = Verdict::kWarn;
      v.reason = fmt::format("paired by order alignment only (confidence {:.2f}); ", row.match_confidence) + v.reason;
    }
    // A parameter whose update since an earlier step differs beyond what its gradient explains fails
    // however small its own difference looks (docs/judgement.md "Parameters across steps").
    if (policy == VerdictPolicy::kNoiseModel && row.update && row.update->differs && v.verdict != Verdict::kError) {
      const ParameterUpdate& u = *row.update;
      v.verdict = Verdict::kFail;
      v.reason = fmt::format("its update since step {} differs by {:.3g} of the update's size", u.from_step, u.rel_error) +
                 (u.grad_rel_error == u.grad_rel_error
                      ? fmt::format(" while its gradient there differs by {:.3g}", u.grad_rel_error)
                      : std::string()) +
                 ": the optimizer step differs; " + v.reason;
    }
    row.verdict = v.verdict;
    row.reason = std::move(v.reason);
  }
  result.policy = policy;
  result.summary = summarize_compare(result);
}

}  // namespace parity
