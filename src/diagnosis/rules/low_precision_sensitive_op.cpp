// LOW_PRECISION_SENSITIVE_OP: the op that creates the error is a precision-sensitive one (a
// normalisation, softmax / log-softmax, exp / log, a reduction) and its error is beyond rounding noise.
// Seed 004 §3.1 and §5.1: "block N output suddenly far from golden → a sensitive op (Norm/Softmax) forced
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
    if (row.golden.role != "output") continue;
    return fmt::format("output dtype golden {} / target {}", dtype_name(row.golden.dtype), dtype_name(row.target.dtype));
  }
  return "output dtype unknown";
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
    if (!(is_sensitive_op(e.op) || is_sensitive_op(e.module))) continue;
    if (is_random_op(e.op) || is_random_op(e.module)) continue;
    Diagnosis d;
    d.strength = (&s == top_source(ctx)) ? 2 : 1;
    d.events.push_back(e.name);
    d.evidence.push_back(fmt::format("{} ({}) turns inputs at {} into output at {} (×{:.3g}); {}", e.name,
                                     e.op.empty() ? e.module : e.op, units(e.input_ratio), units(e.output_ratio),
                                     e.amplification, dtypes_of(ctx, e)));
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
