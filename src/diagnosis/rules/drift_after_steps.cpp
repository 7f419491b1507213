// DRIFT_AFTER_STEPS: the first step's computation agrees within rounding, and at a later step the
// parameters already differ when the model reads them — before any op of that step has run. Per-op
// numerics are then fine; what differs is the update between steps: optimizer settings and states
// (betas, eps, weight decay, master weights), the learning-rate schedule, gradient communication
// (seed 000 §2.1 "trajectory deviation"; seed 004 §2).
//
// Evidence needed: (1) the first step's model rows (forward and backward) have no structural row — the
// optimizer's own ops, recorded after the last backward record, are the update and may differ; (2) a
// later step whose parameter records (captured at each module's first call, i.e. before use) differ
// structurally. Without parameter records, (2) falls back to the first later step with a structural row.
#include <algorithm>
#include <map>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

struct StepRows {
  int64_t rows = 0, structural = 0;
  int64_t last_backward_order = -1;  // the model's backward ends here; later ops are the update
  std::vector<const CompareRow*> params_differing;
  std::vector<const CompareRow*> update_differing;  // step ops after the backward pass
  const CompareRow* worst = nullptr;
  bool has_params = false;
};

bool is_structural(const CompareRow& row) { return row.noise == NoiseClass::kStructural; }

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::map<int64_t, StepRows> steps;
  for (const CompareRow& row : ctx.result->rows) {
    const Record& g = *row.golden;
    if (g.step < 0 || row.noise == NoiseClass::kUnknown) continue;
    StepRows& s = steps[g.step];
    if (g.direction == "backward") s.last_backward_order = std::max(s.last_backward_order, g.order);
  }
  if (steps.size() < 2) return {};
  for (const CompareRow& row : ctx.result->rows) {
    const Record& g = *row.golden;
    if (g.step < 0 || row.noise == NoiseClass::kUnknown) continue;
    StepRows& s = steps[g.step];
    const bool update = g.direction == "forward" && s.last_backward_order >= 0 && g.order > s.last_backward_order;
    if (update) {
      if (is_structural(row)) s.update_differing.push_back(&row);
      continue;
    }
    ++s.rows;
    if ((g.role == "parameter" || g.role == "buffer") && g.direction == "forward") {
      s.has_params = true;
      if (is_structural(row)) s.params_differing.push_back(&row);
    }
    if (!is_structural(row)) continue;
    ++s.structural;
    if (!s.worst || row.noise_ratio > s.worst->noise_ratio) s.worst = &row;
  }
  const auto& [first_step, first] = *steps.begin();
  if (first.structural > 0) return {};  // the first step itself differs: a per-op cause, not drift
  auto later = std::next(steps.begin());
  auto drift = std::find_if(later, steps.end(), [](const auto& kv) {
    const StepRows& s = kv.second;
    return s.has_params ? !s.params_differing.empty() : s.structural > 0;
  });
  if (drift == steps.end()) return {};
  const auto& [step, s] = *drift;

  Diagnosis d;
  d.strength = 3;
  d.severity = Severity::kWarn;  // a cause: how far the drift goes is the rows' to say
  d.evidence.push_back(fmt::format("step {}: {} model rows, none beyond rounding", first_step, first.rows));
  if (s.has_params) {
    d.evidence.push_back(fmt::format("step {}: {} parameters differ before they are used:", step,
                                     s.params_differing.size()));
    std::vector<std::string> lines;
    for (const CompareRow* row : s.params_differing) {
      lines.push_back(fmt::format("  {}: {}", row->golden->name, row_summary(*row)));
      d.events.push_back(event_name(*row->golden));
    }
    append_limited(d.evidence, lines, 6);
  } else {
    d.evidence.push_back(fmt::format("step {}: {} of {} rows beyond rounding, worst {} (no parameter records)", step,
                                     s.structural, s.rows, s.worst ? s.worst->golden->name : "?"));
    if (s.worst) d.events.push_back(event_name(*s.worst->golden));
  }
  // The update of the step before is where the difference is made, when capture saw it.
  const StepRows& before = std::prev(drift)->second;
  if (!before.update_differing.empty()) {
    const CompareRow& u = *before.update_differing.front();
    d.evidence.push_back(fmt::format("the update after step {}'s backward already differs: {} ({}{})",
                                     std::prev(drift)->first, event_name(*u.golden), units(u.noise_ratio),
                                     before.update_differing.size() > 1
                                         ? fmt::format(", and {} more update ops", before.update_differing.size() - 1)
                                         : ""));
  }
  d.advice = fmt::format(
      "Step {} agrees and step {} starts from different parameters: compare what updates them between steps — "
      "optimizer settings and states (lr, betas, eps, weight decay, master weights), the learning-rate schedule, "
      "gradient clipping and all-reduce.",
      first_step, step);
  return {d};
}

}  // namespace

extern const Rule rule_drift_after_steps{"DRIFT_AFTER_STEPS", "Aligned at the first step, diverging later", run};

}  // namespace parity
