// decide_run_verdict: the one rule by which a run's diagnoses reach its verdict (docs/diagnosis.md
// "Severity"). The rows' verdict is what was measured; a diagnosis whose severity is worse raises it, so
// that no headline passes beside a finding that says the run is broken (issue 28 §6: an OVERFLOW
// confirmed by replay next to "PASSED WITH WARNINGS").
#include "parity/diagnosis.h"

namespace parity {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarn: return "warn";
    case Severity::kFail: return "fail";
  }
  return "info";
}

namespace {

// The verdict a severity asks for: info asks for nothing (a pass changes nothing).
Verdict verdict_of(Severity s) {
  return s == Severity::kFail ? Verdict::kFail : s == Severity::kWarn ? Verdict::kWarn : Verdict::kPass;
}

}  // namespace

RunVerdict decide_run_verdict(Verdict rows_verdict, const std::vector<Diagnosis>& diagnoses) {
  RunVerdict run{rows_verdict, ""};
  for (const Diagnosis& d : diagnoses) {
    const Verdict asked = verdict_of(d.severity);
    if (asked <= run.verdict) continue;
    run.verdict = asked;
    run.raised_by = d.code + ": " + d.title + " (the rows alone: " + verdict_name(rows_verdict) + ")";
  }
  return run;
}

}  // namespace parity
