// LOSS_SCALE: the target's (or both sides') backward pass ran on a scaled loss — GradScaler, or
// `(loss * S).backward()` — and parity compared its gradients after unscaling (parity/loss_scale.h,
// docs/judgement.md "Loss scaling"). Informational: loss scaling is what mixed-precision training does on
// purpose, so this finding is never a failure and never a cause; the rows it unscaled are judged as any
// other, and overflow/underflow of the scaled gradients are GRAD_OVERFLOW's and GRAD_UNDERFLOW's.
#include <cmath>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

// "4096 = 2^12", "0.125 = 2^-3".
std::string power_text(int k) { return fmt::format("{:g} = 2^{}", std::ldexp(1.0, k), k); }

// "scaling op `<global>/mul#0` argument 4096 in the target".
std::string op_text(const LossScaleOp& op, const char* side) {
  return fmt::format("scaling op `{}` argument {:g} in the {}", op.event, op.factor, side);
}

// One (rank, step): the scale, the rows that share it, the recorded scaling ops (and whether they agree).
std::string evidence_line(const LossScale& s) {
  const ScaleEvidence& e = s.evidence;
  std::string line = fmt::format(
      "target gradients × {} (step {}, rank {}), compared after unscaling; evidence: {} of {} backward rows at "
      "ratio 2^{} ± {:.2g} (median log2 ratio {:.4f})",
      power_text(e.log2_ratio), s.step, s.rank, e.rows_at_ratio, e.rows_measured, e.log2_ratio, e.max_deviation,
      e.median);
  if (s.target_op) line += ", " + op_text(*s.target_op, "target");
  if (s.golden_op) line += ", " + op_text(*s.golden_op, "golden");
  if (s.target_op || s.golden_op) {
    const double ratio = (s.target_op ? s.target_op->factor : 1.0) / (s.golden_op ? s.golden_op->factor : 1.0);
    if (ratio != std::ldexp(1.0, e.log2_ratio))
      line += fmt::format(" — the recorded ops give ×{:g}, not the rows' ×{:g}: the rows decide", ratio,
                          std::ldexp(1.0, e.log2_ratio));
  }
  return line;
}

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  const std::vector<LossScale>& scales = ctx.result->loss_scales;
  if (scales.empty()) return {};
  Diagnosis d;
  d.strength = 0;  // no action needed: never a cause, never a failure
  int64_t rows = 0;
  for (const CompareRow& row : ctx.result->rows) rows += row.loss_scale_log2 != 0;
  d.evidence.push_back(fmt::format("{} backward rows in {} (rank, step) compared after unscaling the target",
                                   rows, scales.size()));
  std::vector<std::string> lines;
  for (const LossScale& s : scales) {
    lines.push_back(evidence_line(s));
    for (const std::optional<LossScaleOp>* op : {&s.target_op, &s.golden_op})
      if (*op && std::find(d.events.begin(), d.events.end(), (*op)->event) == d.events.end())
        d.events.push_back((*op)->event);
  }
  append_limited(d.evidence, lines, 6);
  d.evidence.push_back("overflow and underflow of the gradients are judged on the values as stored (scaled)");
  d.advice =
      "None needed: loss scaling multiplies every gradient of a step by the scale and the optimizer divides it "
      "out; parity compared the gradients after dividing the target's by the scale (exact for a power of two).";
  return {d};
}

}  // namespace

extern const Rule rule_loss_scale{"LOSS_SCALE", "Loss scaling: gradients compared after unscaling", run};

}  // namespace parity
