// DRIFT_AFTER_STEPS: step 0 (the first step compared) agrees within rounding, a later step does not.
// Single-step alignment passed, so the per-op numerics are fine; what differs accumulates across steps:
// optimizer states and hyper-parameters, gradient communication, seeds advancing differently (seed 000
// §2.1 "trajectory deviation"; seed 004 §2).
#include <algorithm>
#include <map>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  struct StepInfo {
    int64_t rows = 0, structural = 0;
    double worst = 0;
    std::string worst_name;
  };
  std::map<int64_t, StepInfo> steps;
  for (const CompareRow& row : ctx.result->rows) {
    if (row.golden.step < 0 || row.noise == NoiseClass::kUnknown) continue;
    StepInfo& s = steps[row.golden.step];
    ++s.rows;
    if (row.noise == NoiseClass::kStructural) ++s.structural;
    if (row.noise_ratio > s.worst) {
      s.worst = row.noise_ratio;
      s.worst_name = row.golden.name;
    }
  }
  if (steps.size() < 2 || steps.begin()->second.structural > 0) return {};
  const auto first_bad = std::find_if(steps.begin(), steps.end(), [](const auto& kv) { return kv.second.structural > 0; });
  if (first_bad == steps.end()) return {};
  Diagnosis d;
  d.strength = 2;
  for (const auto& [step, s] : steps)
    d.evidence.push_back(fmt::format("step {}: {} of {} rows structural, worst {}", step, s.structural, s.rows,
                                     s.worst_name.empty() ? "0 u (identical)" : units(s.worst) + " (" + s.worst_name + ")"));
  d.events.push_back(first_bad->second.worst_name);
  d.advice = fmt::format(
      "Step {} agrees, step {} does not: compare what carries state between steps — optimizer settings and "
      "states (betas, eps, weight decay, master weights), gradient all-reduce, learning-rate schedule, and seeds "
      "consumed per step.",
      steps.begin()->first, first_bad->first);
  return {d};
}

}  // namespace

extern const Rule rule_drift_after_steps{"DRIFT_AFTER_STEPS", "Aligned at the first step, diverging later", run};

}  // namespace parity
