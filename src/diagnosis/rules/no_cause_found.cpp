// NO_CAUSE_FOUND: the run fails and no rule names a cause. A failing headline never stands alone (issue
// 28 §6: bf16 weight updates that round to nothing failed a run with no diagnosis and "Suspects: none"):
// this finding lists the failing rows it looked at, what kind of failure each is, and why no rule
// matched, so that the reader knows where to look next. Registered last: it reads the diagnoses of every
// other rule (DiagnosisContext::earlier).
#include <cmath>
#include <map>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

// A diagnosis that names a cause (severity warn or fail) explains a failure; context (info) does not.
const std::vector<Diagnosis>& earlier(const DiagnosisContext& ctx) {
  static const std::vector<Diagnosis> none;
  return ctx.earlier ? *ctx.earlier : none;  // a rule run alone, outside diagnose(), has no earlier rules
}

bool a_cause_is_named(const DiagnosisContext& ctx) {
  for (const Diagnosis& d : earlier(ctx))
    if (d.severity != Severity::kInfo) return true;
  return false;
}

// What failed a row, in the words of the verdict policy (docs/judgement.md "Verdict policy").
std::string failure_kind(const CompareRow& row) {
  if (row.verdict == Verdict::kError) return "error";
  if (row.update && row.update->differs) return "parameter update";
  if (row.noise == NoiseClass::kStructural) return "beyond rounding";
  return "fixed thresholds";
}

// Why the rules that read rows and suspects had nothing to say about this kind of failure.
std::string why_unexplained(const std::string& kind, bool has_events) {
  if (!has_events && kind != "error")
    return "the inputs hold tensors without ops, modules or roles (plain tensor files): no rule can relate a "
           "row to where it is computed";
  if (kind == "parameter update")
    return "the parameter agrees within rounding where it is compared, but its change since the earlier step "
           "does not, and not because the step rounds to nothing in the target's dtype (UPDATE_LOST_TO_ROUNDING "
           "reads that): a different learning rate, weight decay, clipping or optimizer state gives this";
  if (kind == "beyond rounding")
    return "no event creates this error from inputs within noise (no source suspect), and its inputs and "
           "parameters are not the first to differ";
  if (kind == "error") return "the row could not be measured (see its reason)";
  return "the noise model could not judge the row; the fixed thresholds fail it";
}

// Parameters whose update differs by ‖u_t − u_g‖ / ‖u_g‖ = 1 ± 1 %: what a target that did not move
// (u_t = 0) gives, as when every update is below half an ulp of the weight.
std::vector<std::string> parameters_that_did_not_move(const CompareResult& result) {
  std::vector<std::string> out;
  for (const CompareRow& row : result.rows)
    if (row.verdict == Verdict::kFail && row.update && row.update->differs && std::fabs(row.update->rel_error - 1) < 0.01)
      out.push_back(row.golden->name);
  return out;
}

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  const CompareSummary& s = ctx.result->summary;
  if ((s.verdict != Verdict::kFail && s.verdict != Verdict::kError) || a_cause_is_named(ctx)) return {};
  Diagnosis d;
  d.strength = 1;
  d.severity = Severity::kFail;  // only ever beside rows that fail: it adds no failure of its own
  std::map<std::string, int64_t> kinds;
  std::vector<std::string> rows;
  for (const CompareRow& row : ctx.result->rows) {
    if (row.verdict != Verdict::kFail && row.verdict != Verdict::kError) continue;
    const std::string kind = failure_kind(row);
    ++kinds[kind];
    if (d.events.size() < 5) d.events.push_back(row.golden->name);
    rows.push_back(fmt::format("{} [{}]: {}", row.golden->name, kind, row.reason));
  }
  std::string counts;
  for (const auto& [kind, n] : kinds) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, kind);
  d.evidence.push_back(fmt::format("{} failing rows looked at ({}); suspects: {}", s.fail + s.error,
                                   counts.empty() ? "none" : counts,
                                   ctx.analysis->suspects.empty() ? "none" : std::to_string(ctx.analysis->suspects.size())));
  for (const auto& [kind, n] : kinds) d.evidence.push_back(kind + ": " + why_unexplained(kind, ctx.analysis->has_events));
  if (const std::vector<std::string> still = parameters_that_did_not_move(*ctx.result); !still.empty())
    d.evidence.push_back(fmt::format("{} of them differ by 1.00 of the update's size, as a target update of zero "
                                     "does (the parameter did not move): {}{}", still.size(), still[0],
                                     still.size() > 1 ? fmt::format(" and {} more", still.size() - 1) : ""));
  const int64_t unmatched = s.unmatched_golden + s.unmatched_target - s.unmatched_implementation;
  if (unmatched > 0)
    d.evidence.push_back(fmt::format("{} records present in one run only (see \"unmatched\"): nothing to compare "
                                     "them with", unmatched));
  if (s.problems > 0) d.evidence.push_back(fmt::format("{} files or records could not be read (see \"problems\")", s.problems));
  append_limited(d.evidence, rows, 5);
  std::string tried;
  for (const Diagnosis& e : earlier(ctx)) tried += (tried.empty() ? "" : ", ") + e.code;
  d.evidence.push_back("rules that fired, none naming a cause: " + (tried.empty() ? std::string("none") : tried));
  d.advice =
      "Look at the failing rows above in execution order (parity compare --sort order); replay the first one "
      "(parity replay) to see whether its op creates the difference from its recorded inputs.";
  return {std::move(d)};
}

}  // namespace

extern const Rule rule_no_cause_found{"NO_CAUSE_FOUND", "the run fails and no rule names a cause", run};

}  // namespace parity
