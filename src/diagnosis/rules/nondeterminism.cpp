// NONDETERMINISM: a random op (dropout, bernoulli, rand*) creates the difference — its inputs agree,
// its output does not — or two runs with identical configuration and dtypes differ beyond rounding
// (a golden re-run that disagrees with itself). Seed 000 §2.3: seeds, shuffle, init and dropout must
// be fixed before comparing.
#include <algorithm>
#include <cmath>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::vector<Diagnosis> out;
  // (b) a random op is a source.
  for (const EventError& e : ctx.analysis->events) {
    if (e.role != EventRole::kSource || !(is_random_op(e.op) || is_random_op(e.module) || is_random_op(e.name)))
      continue;
    Diagnosis d;
    d.strength = 3;
    d.events.push_back(e.name);
    d.evidence.push_back(fmt::format("{} ({}) is a random op: inputs {}, output {} (×{:.3g})", e.name,
                                     e.op.empty() ? e.module : e.op, units(e.input_ratio), units(e.output_ratio),
                                     e.amplification));
    add_worst_output_row(ctx, e, d.evidence);
    d.advice =
        "Seed every generator identically on both sides before the step (parity.seed_all), or put the model "
        "in eval() / set dropout p=0 for the comparison; a random op only compares once its random stream is "
        "the same.";
    out.push_back(std::move(d));
    return out;  // the first one explains the rest
  }
  // (a) identical configuration and dtypes, yet a structural difference.
  const CompareResult& r = *ctx.result;
  if (!r.golden_fingerprint || !r.target_fingerprint || !ctx.config->empty() || ctx.analysis->rows_structural == 0)
    return out;
  int64_t first_step = -1;
  for (const CompareRow& row : r.rows) {
    if (row.golden.dtype != row.target.dtype) return out;
    if (row.golden.step >= 0 && (first_step < 0 || row.golden.step < first_step)) first_step = row.golden.step;
  }
  // A difference that appears only after the first step is DRIFT_AFTER_STEPS, not a re-run disagreeing.
  const bool first_step_differs = std::any_of(r.rows.begin(), r.rows.end(), [&](const CompareRow& row) {
    return row.noise == NoiseClass::kStructural && row.golden.step == first_step;
  });
  if (!first_step_differs) return out;
  for (const Suspect& s : ctx.analysis->suspects)
    if (s.kind != SuspectKind::kSource) return out;  // differing inputs/weights explain it better
  Diagnosis d;
  d.strength = 1;  // only meaningful when both runs are meant to be the same code (a golden re-run)
  const Suspect* top = top_source(ctx);
  if (top) d.events.push_back(top->name);
  d.evidence.push_back(fmt::format(
      "the runs have identical configuration fingerprints and dtypes, yet {} rows differ structurally; if both "
      "are the same code (a golden re-run), the run is not reproducible",
      ctx.analysis->rows_structural));
  if (top) d.evidence.push_back(fmt::format("first source: {} — {}", top->name, top->why));
  d.advice =
      "Make the run reproducible before comparing: fix seeds, enable deterministic algorithms "
      "(torch.use_deterministic_algorithms(True), CUBLAS_WORKSPACE_CONFIG), and re-run the golden twice to "
      "confirm it agrees with itself.";
  out.push_back(std::move(d));
  return out;
}

}  // namespace

extern const Rule rule_nondeterminism{"NONDETERMINISM", "The runs are not reproducible: a random op or nondeterminism", run};

}  // namespace parity
