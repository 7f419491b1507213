// DECISION_FLIP: a discrete decision — a router's top-k, an argmax, a comparison mask — took another branch
// in the target at positions where its inputs differ by rounding only (classify_rows marks the rows,
// docs/judgement.md "Decision flips"). A tie broken the other way is what low precision does; it is
// information, never a cause and never a failure. The rows of the block it steers are judged given it.
#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::vector<std::string> decisions, masks;
  int64_t affected = 0;
  Diagnosis d;
  for (const CompareRow& row : ctx.result->rows) {
    if (row.flip == FlipRole::kAffected) ++affected;
    if (row.flip == FlipRole::kMask) {
      masks.push_back(fmt::format("{} (step {}, rank {}): {} positions", row.golden->name, row.golden->step,
                                  row.golden->rank, row.mask_flips));
      d.events.push_back(row.golden->name);
    }
    if (row.flip != FlipRole::kDecision) continue;
    const Record& g = *row.golden;
    std::string where = fmt::format("{} ({}, step {}, rank {})", g.name, g.op.str(), g.step, g.rank);
    if (row.metrics)
      where += fmt::format(": {:.0f} of {} positions differ",
                           std::round((1.0 - row.metrics->thousandth_ratio) * static_cast<double>(row.metrics->compared)),
                           row.metrics->compared);
    decisions.push_back(std::move(where));
    d.events.push_back(g.name);
  }
  if (decisions.empty() && masks.empty()) return {};
  d.strength = 0;
  d.severity = Severity::kInfo;  // a tie broken the other way is not a fault
  if (!decisions.empty()) {
    d.evidence.push_back(fmt::format("{} decision output(s) flipped while their inputs differ by rounding only "
                                     "(at most the structural bound)",
                                     decisions.size()));
    append_limited(d.evidence, decisions, 6);
  }
  if (!masks.empty()) {
    d.evidence.push_back(fmt::format("{} ReLU gradient(s) whose mask flipped where the pre-activation lies within "
                                     "rounding of 0; each judged outside the flipped positions",
                                     masks.size()));
    append_limited(d.evidence, masks, 6);
  }
  if (affected > 0)
    d.evidence.push_back(fmt::format("{} rows of the blocks these decisions steer are judged given the flip (elevated "
                                     "at most); their difference is carried into the later rows of the step",
                                     affected));
  d.advice =
      "No action needed for the flip itself: low precision breaks near-ties (router scores, maxima) the other way. "
      "To compare the computation behind it, run the target's routing in the golden's precision (upcast the router "
      "to fp32) or compare with the decisions forced equal.";
  return {d};
}

}  // namespace

extern const Rule rule_decision_flip{"DECISION_FLIP", "A discrete decision flipped where its inputs tie within rounding", run};

}  // namespace parity
