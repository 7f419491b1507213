// GRAD_OVERFLOW: parameter gradients hold Inf/NaN in the target and not in the golden — with fp16 and a
// static loss scale, the scale is too high (seed 004 §3.2: lower it by an order of magnitude, e.g.
// 32768 → 4096; if NaN disappears it was overflow; or use dynamic loss scaling).
#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

struct Counts {
  int64_t nan = 0, inf = 0;
};

std::optional<Counts> nonfinite_of(const CompareRow& row, bool target) {
  if (!row.metrics && !row.stats) return std::nullopt;
  const TensorStats& s = row.metrics ? (target ? row.metrics->target : row.metrics->golden)
                                     : (target ? target_stats(row) : golden_stats(row));
  return Counts{s.nan_count, s.inf_count};
}

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  // NaN/Inf born in the forward pass reach the gradients too: that is OVERFLOW's story. Otherwise Inf
  // born in backward is the gradients' own overflow, whatever rounding the forward pass differs by
  // (an fp16 target against an fp32 golden always differs a little).
  if (target_forward_nonfinite(ctx)) return {};
  std::vector<std::string> lines, events;
  int64_t grads = 0;
  for (const CompareRow& row : ctx.result->rows) {
    if (!is_param_grad_row(row)) continue;
    ++grads;
    auto t = nonfinite_of(row, true), g = nonfinite_of(row, false);
    if (!t || !g) continue;
    if (t->nan + t->inf == 0 || g->nan + g->inf > 0) continue;
    lines.push_back(fmt::format("{}: {} Inf, {} NaN in target (golden finite)", row.golden->name, t->inf, t->nan));
    events.push_back(row.golden->name);
  }
  if (events.empty()) return {};
  Diagnosis d;
  d.strength = 3;
  d.severity = Severity::kFail;  // gradients the golden keeps finite are Inf/NaN: the step is broken
  d.events = events;
  d.evidence.push_back(fmt::format("{} of {} parameter gradients overflow in the target", events.size(), grads));
  append_limited(d.evidence, lines, 8);
  if (ctx.target_overflow->loss_scale_advice == "lower")
    d.evidence.push_back("gradient statistics of the target alone point the same way: lower the loss scale");
  d.advice =
      "Lower the loss scale (by an order of magnitude, e.g. 32768 → 4096) or enable dynamic loss scaling, "
      "which skips steps with Inf gradients and backs the scale off (seed 004 §3.2).";
  return {d};
}

}  // namespace

extern const Rule rule_grad_overflow{"GRAD_OVERFLOW", "Gradients overflow: loss scale too high", run};

}  // namespace parity
