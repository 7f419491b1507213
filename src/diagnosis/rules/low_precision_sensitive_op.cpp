// LOW_PRECISION_SENSITIVE_OP: the op that creates the error is a precision-sensitive one (a
// normalisation, softmax / log-softmax, exp / log, a reduction) and its error is beyond rounding noise.
// A low-precision dtype (f16, bf16, fp8) must take part in the event. Seed 004 §3.1 and §5.1: "block N output suddenly far from golden → a sensitive op (Norm/Softmax) forced
// to low precision → compute it in fp32".
#include <cmath>
#include <set>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

std::string dtypes_of(const DiagnosisContext& ctx, const EventError& e) {
  std::string g, t;
  for (size_t i : e.rows) {
    const CompareRow& row = ctx.result->rows[i];
    if (row.golden->role != "output") continue;
    return fmt::format("output dtype golden {} / target {}", dtype_name(row.golden->dtype), dtype_name(row.target->dtype));
  }
  return "output dtype unknown";
}

bool low_precision(DType t) { return dtype_is_float(t) && unit_roundoff(t) > 0x1p-12; }  // f16, bf16, fp8

// Is a record of `module` part of an event of `outer`: the module itself or one inside it? An event's
// execution-order span is not enough: a module's backward span holds the backward ops of the modules
// that fed it (a ReLU's backward span reaches into the BatchNorm's before it), which are not its own.
bool within(std::string_view module, std::string_view outer) {
  if (outer.empty() || outer == "<root>" || module == outer) return true;
  return module.size() > outer.size() && module.substr(0, outer.size()) == outer && module[outer.size()] == '.';
}
bool record_within(const Record& r, const EventError& e) {
  return r.rank == e.rank && r.step == e.step && r.direction == e.direction && r.order >= e.first_order &&
         r.order <= e.last_order && within(r.module.str(), e.module.str());
}

// Does a low-precision dtype take part in the event: in its own rows, or in the rows of what it contains
// (the ops inside a norm module, recorded with their own dtypes)? Without one, the op is not running
// in low precision and this diagnosis has no basis.
std::string low_precision_involved(const DiagnosisContext& ctx, const EventError& e) {
  for (size_t i : e.rows) {
    const CompareRow& row = ctx.result->rows[i];
    for (DType t : {row.target->dtype, row.golden->dtype})
      if (low_precision(t)) return fmt::format("{} is {}", row.golden->name, dtype_name(t));
  }
  if (e.first_order < 0) return "";
  for (const CompareRow& row : ctx.result->rows) {
    const Record& g = *row.golden;
    if (!record_within(g, e)) continue;
    for (DType t : {row.target->dtype, row.golden->dtype})
      if (low_precision(t)) return fmt::format("{} inside it is {}", g.name, dtype_name(t));
  }
  // Ops of one run only inside it: a hand-written kernel whose steps (casts to fp16, its own mean and
  // variance) the other run does in one fused op are unmatched, and their dtypes are evidence as much.
  for (const auto& [records, side] : {std::pair{&ctx.result->unmatched_target, "target"},
                                      std::pair{&ctx.result->unmatched_golden, "golden"}}) {
    for (const Record& r : *records) {
      if (!record_within(r, e) || !low_precision(r.dtype)) continue;
      return fmt::format("{} inside it, present in the {} only, is {}", r.name, side, dtype_name(r.dtype));
    }
  }
  return "";
}

// A sensitive op inside a source module whose target computes in a lower precision than its golden (a
// softmax in f16 where the golden's is f32): the module creates the error, this op is where precision was
// lowered. Judged at its own precision the op is fine (an f16 softmax within f16 rounding); its fp32
// consumers see the f16 rounding as error, so the module, not the op, is the source.
const CompareRow* lowered_sensitive_op_inside(const DiagnosisContext& ctx, const EventError& e) {
  if (e.first_order < 0) return nullptr;
  for (const CompareRow& row : ctx.result->rows) {
    const Record& g = *row.golden;
    if (!record_within(g, e) || g.op.str().empty() || !is_sensitive_op(g.op.str()) || is_random_op(g.op.str()))
      continue;
    const DType gt = g.dtype, tt = row.target->dtype;
    if (low_precision(tt) && dtype_is_float(gt) && unit_roundoff(tt) > unit_roundoff(gt)) return &row;
  }
  return nullptr;
}

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::vector<Diagnosis> out;
  // A backward source whose forward event is already named is the same op seen twice.
  std::set<std::string> modules_named;
  for (const Suspect& s : ctx.analysis->suspects) {
    if (s.kind != SuspectKind::kSource) continue;
    if (!modules_named.insert(s.module + "|" + s.op).second) continue;
    const EventError& e = event_of(ctx, s);
    if (std::isinf(e.amplification)) continue;  // NaN/Inf born here: OVERFLOW tells that story
    if (is_random_op(e.op) || is_random_op(e.module)) continue;
    // On statistics alone the error an op's inputs explain cannot be computed: a reduction (a norm's
    // parameter gradients, summed over the batch) amplifies its inputs' rounding by its conditioning,
    // Σ|aᵢbᵢ| / |Σaᵢbᵢ|, which only the tensors give (src/analysis/conditioning.h). An elevated output
    // (a bf16 BatchNorm's grad/weight at 7 u from inputs at 0.8 u) is then no evidence of a cause; an
    // output beyond the structural bound is.
    if (e.statistics_only && !(e.output_ratio > ctx.options.noise.structural_min)) continue;
    const CompareRow* lowered = nullptr;
    std::string low;
    if (is_sensitive_op(e.op) || is_sensitive_op(e.module)) {
      low = low_precision_involved(ctx, e);
    } else if ((lowered = lowered_sensitive_op_inside(ctx, e)) != nullptr) {
      low = fmt::format("{} inside it computes in {} in the target, {} in the golden", lowered->golden->name,
                        dtype_name(lowered->target->dtype), dtype_name(lowered->golden->dtype));
    }
    if (low.empty()) continue;  // an fp32 op that differs is not a precision problem
    Diagnosis d;
    d.strength = (&s == top_source(ctx)) ? 2 : 1;
    d.severity = d.strength >= 2 ? Severity::kWarn : Severity::kInfo;  // the top source is a cause; others context
    d.events.push_back(e.name);
    d.evidence.push_back(fmt::format("{} ({}) turns inputs at {} into output at {} (×{:.3g}); {}", e.name,
                                     e.op.empty() ? e.module : e.op, units(e.input_ratio), units(e.output_ratio),
                                     e.amplification, dtypes_of(ctx, e)));
    d.evidence.push_back("low precision takes part: " + low);
    add_worst_output_row(ctx, e, d.evidence);
    if (e.statistics_only) d.evidence.push_back("measured on statistics only: weaker evidence");
    d.advice =
        "Compute this op in fp32 and cast the result back (seed 004 §3.1):\n"
        "    def safe_rmsnorm(x, weight, eps=1e-6):\n"
        "        dtype = x.dtype; x = x.float()\n"
        "        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)\n"
        "        return (x * weight.float()).to(dtype)\n"
        "Norms, softmax and exp/log are cheap; upcasting them costs little speed.";
    out.push_back(std::move(d));
    if (out.size() >= 3) break;
  }
  return out;
}

}  // namespace

extern const Rule rule_low_precision_sensitive_op{
    "LOW_PRECISION_SENSITIVE_OP", "A precision-sensitive op (norm/softmax/exp/reduction) creates the error", run};

}  // namespace parity
