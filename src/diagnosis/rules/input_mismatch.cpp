// INPUT_MISMATCH: the model's inputs already differ before any computation (seed 004 §2.1: data
// pipeline, shuffle, seed, preprocessing; "at least 30 % of precision problems").
#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::vector<Diagnosis> out;
  for (const Suspect& s : ctx.analysis->suspects) {
    if (s.kind != SuspectKind::kInputs) continue;
    const EventError& e = event_of(ctx, s);
    Diagnosis d;
    d.strength = 3;
    d.severity = Severity::kFail;  // two runs on other inputs are not comparable at all
    d.events.push_back(e.name);
    d.evidence.push_back(fmt::format("first event of step {} rank {}: {} — inputs {}", e.step, e.rank, e.name,
                                     units(e.input_ratio)));
    for (size_t i : e.rows) {
      const CompareRow& row = ctx.result->rows[i];
      if (row.golden->role != "input") continue;
      if (row.noise == NoiseClass::kNoise) continue;
      d.evidence.push_back(fmt::format("{}: {}", row.golden->name, row_summary(row)));
      d.events.push_back(row.golden->name);
    }
    d.advice =
        "Feed both runs the same saved inputs (save the preprocessed batch as a file and load it on both "
        "sides), fix every seed (parity.seed_all) and the shuffle order, and check preprocessing (resize "
        "library, normalisation constants, tokenizer).";
    out.push_back(std::move(d));
    break;  // one is enough: later steps repeat the same cause
  }
  return out;
}

}  // namespace

extern const Rule rule_input_mismatch{"INPUT_MISMATCH", "The model's inputs already differ", run};

}  // namespace parity
