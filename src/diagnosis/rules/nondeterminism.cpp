// NONDETERMINISM: a random op (dropout, bernoulli, rand*) creates the difference — its inputs agree
// within rounding, its output does not. That is positive evidence of an unseeded random stream; two
// runs that merely differ are not (a fault differs too). Seed 000 §2.3: seeds, shuffle, init and
// dropout must be fixed before comparing.
#include <algorithm>
#include <cmath>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

bool arguments_differ(const DiagnosisContext& ctx, const EventError& e) {
  if (!ctx.golden_source || !ctx.target_source) return false;
  for (size_t i : e.rows) {
    const CompareRow& row = ctx.result->rows[i];
    if (row.golden->role != "output" || row.golden->index != 0) continue;
    const std::string g = ctx.golden_source->op_arguments_json(*row.golden);
    const std::string t = ctx.target_source->op_arguments_json(*row.target);
    if (!g.empty() && !t.empty() && g != t) return true;
  }
  return false;
}

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::vector<Diagnosis> out;
  // A random op is a source.
  for (const EventError& e : ctx.analysis->events) {
    if (e.role != EventRole::kSource || !(is_random_op(e.op) || is_random_op(e.module) || is_random_op(e.name)))
      continue;
    // The same inputs, a different output: only then is the randomness itself the cause.
    if (std::isnan(e.input_ratio) || e.input_ratio > ctx.options.noise.noise_max) continue;
    // Called with other arguments (dropout's p, training): OP_ARGUMENT_MISMATCH names that cause.
    if (arguments_differ(ctx, e)) continue;
    Diagnosis d;
    d.strength = 3;
    d.severity = Severity::kWarn;
    d.events.push_back(e.name);
    d.evidence.push_back(fmt::format("{} ({}) is a random op: its inputs agree ({}), its output does not ({}, ×{:.3g})", e.name,
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
  return out;
}

}  // namespace

extern const Rule rule_nondeterminism{"NONDETERMINISM", "The runs are not reproducible: a random op or nondeterminism", run};

}  // namespace parity
