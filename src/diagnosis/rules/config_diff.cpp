// CONFIG_DIFF: the fingerprints differ in a setting that changes numerics (dtype policy, TF32,
// deterministic flags, library versions, precision-mode environment variables). Seed 004 §5.2: record
// these on both sides before comparing, so that a difference is not blamed on the hardware.
#include "diagnosis/rule_util.h"

namespace parity {
namespace {

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::vector<std::string> lines, keys;
  for (const ConfigDifference& d : *ctx.config) {
    if (!d.numeric || d.category == "model") continue;  // model settings: TRAIN_INFER_MISMATCH
    lines.push_back(fmt::format("{} [{}]: golden {} → target {}", d.key, d.category, d.golden, d.target));
    keys.push_back(d.key);
  }
  if (lines.empty()) return {};
  Diagnosis d;
  d.strength = 1;  // context for every other finding, not a cause by itself
  d.severity = Severity::kInfo;
  diagnosis_detail::append_limited(d.evidence, lines, 12);
  d.advice =
      "Align these settings (or confirm each is intended) before reading the tensor differences: precision "
      "policy, TF32 and deterministic switches and library versions all change rounding.";
  d.events = keys;
  return {d};
}

}  // namespace

extern const Rule rule_config_diff{"CONFIG_DIFF", "Configurations differ in settings that change numerics", run};

}  // namespace parity
