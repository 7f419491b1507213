// GRAD_UNDERFLOW: parameter gradients that are nonzero in the golden are zero (or subnormal) in the
// target — with fp16 and a static loss scale, the scale is too low and small gradients flush to zero
// (seed 004 §3.2 and the symptom table: "gradients vanish after some steps → fp16 underflow → dynamic or
// larger loss scale").
#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

// A gradient underflows when at least this share of its elements is zero or subnormal in the target and
// that share exceeds the golden's share of exact zeros by at least `kExcess` (so genuinely sparse gradients,
// e.g. embedding rows not in the batch, do not count). The golden's values that are subnormal *in the
// target's dtype* are not excused: they are exactly the ones the target loses (a golden fp32 gradient of
// 1e-7 is what an fp16 gradient flushes).
constexpr double kUnderflowShare = 0.5;
constexpr double kExcess = 0.25;

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  // Gradients follow from the forward pass: when the model's forward already creates error (or NaN/Inf),
  // their state is its consequence. A loss scaled outside the model (at <global>) is no such cause.
  if (target_forward_nonfinite(ctx) || model_forward_differs(ctx)) return {};
  std::vector<std::string> lines, events;
  int64_t grads = 0;
  double worst = 0;
  for (const CompareRow& row : ctx.result->rows) {
    if (!is_param_grad_row(row)) continue;
    ++grads;
    double tz = kNaN, gz = kNaN;
    if (row.metrics && row.metrics->numel > 0) {
      const double n = static_cast<double>(row.metrics->numel);
      tz = (row.metrics->target.zero_count + row.metrics->target.subnormal_count) / n;
      gz = row.metrics->golden.zero_count / n;
    } else if (row.stats && target_stats(row).numel > 0) {
      const TensorStats &t = target_stats(row), &g = golden_stats(row);
      tz = static_cast<double>(t.zero_count + t.subnormal_count) / t.numel;
      gz = static_cast<double>(g.zero_count) / g.numel;
    }
    if (std::isnan(tz) || tz < kUnderflowShare || tz - gz < kExcess) continue;
    worst = std::max(worst, tz);
    lines.push_back(fmt::format("{}: {:.1f} % zero or subnormal in target vs {:.1f} % in golden", row.golden->name,
                                100 * tz, 100 * gz));
    events.push_back(row.golden->name);
  }
  if (events.empty()) return {};
  Diagnosis d;
  d.strength = 3;
  d.severity = Severity::kFail;  // most of a gradient lost to zero: the step is broken
  d.events = events;
  d.evidence.push_back(fmt::format("{} of {} parameter gradients underflow in the target (worst {:.1f} % zero)",
                                   events.size(), grads, 100 * worst));
  append_limited(d.evidence, lines, 8);
  d.advice =
      "Raise the loss scale (or enable dynamic loss scaling) so that small gradients stay above fp16's "
      "smallest normal 2^-14 ≈ 6.1e-5; print the gradients' min/max at a few steps to check the range "
      "(seed 004 §3.2).";
  return {d};
}

}  // namespace

extern const Rule rule_grad_underflow{"GRAD_UNDERFLOW", "Gradients underflow: loss scale too low", run};

}  // namespace parity
