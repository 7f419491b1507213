// OVERFLOW: NaN/Inf are born at an op in the target (its inputs are finite, an output is not) and not
// in the golden at that op, or in the golden too but in other numbers. The same birth in both runs (T5's
// log of a zero relative position, a finfo.min mask plus a score in GPT-Neo) is what the model does on any
// hardware: it stays in the overflow report and is no finding of a difference between the runs. Seed 004 §5.1: "loss suddenly NaN → loss scale too large or exp/log
// overflow → lower the loss scale, stabilise exp-type ops"; msprobe's first-NaN rule.
#include <algorithm>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

const NanOrigin* golden_origin_at(const OverflowReport& g, const NanOrigin& o) {
  for (const NanOrigin& go : g.origins)
    if (go.event == o.event && go.step == o.step && go.rank == o.rank) return &go;
  return nullptr;
}

// Every output of the target's birth holds as many NaN and as many Inf as the golden's output of that name.
bool same_birth(const NanOrigin& golden, const NanOrigin& target) {
  for (const ValueRange& t : target.outputs) {
    const auto g = std::find_if(golden.outputs.begin(), golden.outputs.end(),
                                [&](const ValueRange& r) { return r.name == t.name; });
    if (g == golden.outputs.end() || g->nan_count != t.nan_count || g->inf_count != t.inf_count) return false;
  }
  return true;
}

std::string range_text(const ValueRange& r) {
  return fmt::format("{} [{}] {} min {} max {} |max| {}{}", r.name, r.role, dtype_name(r.dtype), num(r.min),
                     num(r.max), num(r.absmax),
                     (r.nan_count || r.inf_count) ? fmt::format(" ({} NaN, {} Inf)", r.nan_count, r.inf_count) : "");
}

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::vector<Diagnosis> out;
  for (const NanOrigin& o : ctx.target_overflow->origins) {
    if (o.role_is_grad) continue;  // parameter gradients: GRAD_OVERFLOW
    const NanOrigin* golden = golden_origin_at(*ctx.golden_overflow, o);
    if (golden && same_birth(*golden, o)) continue;
    Diagnosis d;
    d.strength = 3;
    const bool both = golden != nullptr;
    // NaN/Inf born in the target from finite inputs where the golden stays finite: the run is broken, at
    // whatever capture level it was seen (issue 28 §6). Where the golden overflows too, the two agree.
    d.severity = both ? Severity::kWarn : Severity::kFail;
    d.events.push_back(o.event);
    std::string where;
    for (const std::string& part : {o.op.empty() ? o.module : o.op, o.direction})
      if (!part.empty()) where += (where.empty() ? "" : " ") + part;
    if (o.step >= 0 || o.rank >= 0) where += fmt::format("{}step {}, rank {}", where.empty() ? "" : ", ", o.step, o.rank);
    d.evidence.push_back(fmt::format("NaN/Inf born at {}{}: inputs finite, outputs not{}", o.event,
                                     where.empty() ? "" : " (" + where + ")",
                                     both ? " — the golden overflows here too, in other numbers" : "; the golden stays finite"));
    d.evidence.push_back(o.explanation);
    for (const ValueRange& r : o.inputs) d.evidence.push_back("input " + range_text(r));
    for (const ValueRange& r : o.outputs) d.evidence.push_back("output " + range_text(r));
    d.evidence.push_back(fmt::format("{} later events of this step are contaminated", o.contaminated));
    d.advice =
        is_sensitive_op(o.op.empty() ? o.module : o.op)
            ? "Stabilise the exp-type op: subtract the row maximum before exp (softmax/logsumexp), compute it in "
              "fp32 and cast the result back (seed 004 §3.1, §5.1)."
            : "Keep this op's inputs in range (compute it in fp32 or bf16 instead of fp16, scale its inputs), and "
              "if it is in the backward pass lower the loss scale (seed 004 §3.2).";
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

extern const Rule rule_overflow{"OVERFLOW", "NaN/Inf are born at an op", run};

}  // namespace parity
