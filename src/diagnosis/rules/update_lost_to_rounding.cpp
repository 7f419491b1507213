// UPDATE_LOST_TO_ROUNDING: a parameter whose optimizer step differs between the runs because the target's
// dtype cannot hold it. Adding an update u to a weight w stored in a float format rounds w + u back to w
// when |u| is below half the format's spacing at w — in bf16 (8 significant bits) every step smaller than
// 2^-9·|w| is lost, so a weight with a small learning rate stops training while the fp32 golden moves
// (Micikevicius et al. 2018, "Mixed Precision Training" §3.1: why mixed precision keeps fp32 master weights).
//
// Evidence, measured element by element on the four tensors (metrics.h compare_updates): of the elements
// the golden moved, how many the target left exactly in place, and how many of those the golden's own step
// would leave in place too when added in the target's dtype (round_t(t_before + u_g) = t_before). The rule
// fires on a parameter whose update differs (its row fails) when most moved elements are lost that way:
// then the target's dtype, not its optimizer or gradient, is what differs.
#include <algorithm>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

// Most of the golden's step is lost: a parameter whose stall has another cause (a learning rate of zero, a
// frozen parameter) leaves steps in place that the target's dtype could have held.
bool lost_to_rounding(const ParameterUpdate& u) { return u.differs && u.moved > 0 && 2 * u.lost >= u.moved; }

std::string evidence_line(const CompareRow& row) {
  const ParameterUpdate& u = *row.update;
  return fmt::format("{} ({}, step {} → {}): {} of the {} elements the golden's step moved stayed in place in the "
                     "target, {} of them because that step, added in {}, rounds back to the same value; ‖u_golden‖ "
                     "{}, updates differ by {} of it",
                     row.golden->name, dtype_name(row.target->dtype), u.from_step, row.golden->step, u.stalled, u.moved,
                     u.lost, dtype_name(row.target->dtype), num(u.golden_norm), num(u.rel_error));
}

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::vector<const CompareRow*> lost;
  int64_t moved = 0, lost_elements = 0;
  for (const CompareRow& row : ctx.result->rows) {
    if (!row.update || !lost_to_rounding(*row.update)) continue;
    lost.push_back(&row);
    moved += row.update->moved;
    lost_elements += row.update->lost;
  }
  if (lost.empty()) return {};
  // The parameters that lost most of their step first: they are the ones that stopped training.
  std::stable_sort(lost.begin(), lost.end(), [](const CompareRow* a, const CompareRow* b) {
    return a->update->lost * b->update->moved > b->update->lost * a->update->moved;
  });
  Diagnosis d;
  d.strength = 2;
  d.severity = Severity::kWarn;  // a cause the rows show: their failing update checks fail the run
  std::vector<std::string> lines;
  for (const CompareRow* row : lost) {
    if (d.events.size() < 5) d.events.push_back(row->golden->name);
    lines.push_back(evidence_line(*row));
  }
  d.evidence.push_back(fmt::format("{} parameters did not take the optimizer's step in the target: {} of {} moved "
                                   "elements lost to rounding in the parameter's dtype",
                                   lost.size(), lost_elements, moved));
  append_limited(d.evidence, lines, 5);
  d.advice =
      "Keep an fp32 master copy of the weights and let the optimizer update it (mixed-precision training: compute "
      "in bf16/fp16, update in fp32 — torch.autocast with fp32 parameters, Megatron/MindSpeed's fp32 main params, "
      "DeepSpeed's bf16 optimizer), or use an optimizer with compensated or stochastic rounding of the update. A "
      "larger learning rate only moves the threshold.";
  return {std::move(d)};
}

}  // namespace

extern const Rule rule_update_lost_to_rounding{
    "UPDATE_LOST_TO_ROUNDING", "A parameter's optimizer step rounds to nothing in the target's dtype", run};

}  // namespace parity
