// The diagnosis engine: runs every registered rule and orders the diagnoses (strongest first).
#include <algorithm>

#include "parity/diagnosis.h"

namespace parity {

std::vector<Diagnosis> diagnose(const DiagnosisContext& ctx) {
  std::vector<Diagnosis> all;
  for (const Rule& rule : registered_rules()) {
    std::vector<Diagnosis> found = rule.run(ctx);
    for (Diagnosis& d : found) {
      if (d.code.empty()) d.code = rule.code;
      if (d.title.empty()) d.title = rule.title;
      all.push_back(std::move(d));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Diagnosis& a, const Diagnosis& b) { return a.strength > b.strength; });
  return all;
}

Findings analyse_and_diagnose(CompareResult& result, const RecordSource* golden, const RecordSource* target,
                              const AnalysisOptions& options) {
  Findings f;
  classify_rows(result, options);
  f.analysis = analyse(result, options);
  f.config = config_diff(result.golden_fingerprint, result.target_fingerprint);
  f.target_overflow = analyse_overflow(measured_records(result, /*target_side=*/true));
  f.target_overflow.source = result.target_source;
  f.golden_overflow = analyse_overflow(measured_records(result, /*target_side=*/false));
  f.golden_overflow.source = result.golden_source;
  DiagnosisContext ctx;
  ctx.result = &result;
  ctx.analysis = &f.analysis;
  ctx.config = &f.config;
  ctx.target_overflow = &f.target_overflow;
  ctx.golden_overflow = &f.golden_overflow;
  ctx.golden_source = golden;
  ctx.target_source = target;
  ctx.options = options;
  f.diagnoses = diagnose(ctx);
  return f;
}

}  // namespace parity
