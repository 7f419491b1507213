// apply_verdict_policy: the final verdict of every compared row. The row's evidence — its fixed judgement,
// noise class, layout, pairing, error shape, cancellation, flipped decision, parameter update — is
// gathered here and judged in one place, decide_row_verdict (parity/verdict_policy.h).
#include <cmath>

#include "parity/compare.h"
#include "parity/noise.h"
#include "parity/verdict_policy.h"

namespace parity {

namespace {

std::string layout_change(const CompareRow& row) {
  if (!row.layout_note.empty()) return row.layout_note.str();
  if (!row.shape_differs) return "";
  return "shapes differ (" + shape_to_string(row.golden->shape) + " vs " + shape_to_string(row.target->shape) +
         ", same element count, compared flat)";
}

RowEvidence::Flip flip_of(FlipRole role) {
  switch (role) {
    case FlipRole::kDecision: return RowEvidence::Flip::kDecision;
    case FlipRole::kAffected: return RowEvidence::Flip::kAffected;
    case FlipRole::kMask: return RowEvidence::Flip::kMask;
    case FlipRole::kNone: break;
  }
  return RowEvidence::Flip::kNone;
}

RowEvidence evidence_of(const CompareRow& row, std::string_view fixed_reason, VerdictPolicy policy) {
  RowEvidence e;
  e.fixed = row.fixed_verdict;
  e.fixed_reason = fixed_reason;
  e.noise = row.noise;
  e.ratio = row.noise_ratio;
  e.layout_change = layout_change(row);
  e.weakly_paired = row.match == MatchKind::kAligned && row.match_confidence < kStrongPairingConfidence;
  e.match_confidence = row.match_confidence;
  if (row.error_structured && row.metrics)
    e.structure = error_shape(*row.metrics, row.golden->shape.empty() ? 1 : row.golden->shape.back());
  e.cancelled = row.cancelled;
  e.sum_cancellation = row.sum_cancellation;
  e.flip = flip_of(row.flip);
  if (row.flip == FlipRole::kDecision) {
    e.flip_op = row.golden->op.view();
    if (row.metrics) {
      e.flipped = std::round((1.0 - row.metrics->thousandth_ratio) * static_cast<double>(row.metrics->compared));
      e.compared = row.metrics->compared;
    }
  }
  e.mask_flips = row.mask_flips;
  if (row.update) {
    e.update_differs = row.update->differs;
    e.update_from_step = row.update->from_step;
    e.update_rel_error = row.update->rel_error;
    e.update_grad_rel_error = row.update->grad_rel_error;
  }
  e.policy = policy;
  return e;
}

}  // namespace

void apply_verdict_policy(CompareResult& result, VerdictPolicy policy) {
  for (CompareRow& row : result.rows) {
    const std::string_view fixed_reason = row.fixed_reason();  // a span of row.reason, rewritten below
    RowVerdict v = decide_row_verdict(evidence_of(row, fixed_reason, policy));
    row.verdict = v.verdict;
    row.fixed_reason_size = static_cast<uint32_t>(fixed_reason.size());
    row.fixed_reason_at = static_cast<uint32_t>(v.fixed_reason_at);
    row.reason = std::move(v.reason);
  }
  result.policy = policy;
  result.summary = summarize_compare(result);
}

}  // namespace parity
