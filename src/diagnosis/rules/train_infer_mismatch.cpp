// TRAIN_INFER_MISMATCH: tokenizer, special-token or RoPE settings differ between the two runs'
// configurations — the runs do not compute the same function, whatever their precision.
#include "diagnosis/rule_util.h"

namespace parity {
namespace {

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::vector<std::string> lines, keys;
  for (const ConfigDifference& d : *ctx.config) {
    if (d.category != "model") continue;
    lines.push_back(fmt::format("{}: golden {} → target {}", d.key, d.golden, d.target));
    keys.push_back(d.key);
  }
  if (lines.empty()) return {};
  Diagnosis d;
  d.strength = 2;
  d.severity = Severity::kWarn;
  diagnosis_detail::append_limited(d.evidence, lines, 12);
  d.advice =
      "Use the training configuration's tokenizer, special tokens (BOS/EOS/PAD) and RoPE settings (theta, "
      "scaling, max positions) in the inference run; these change the function computed, not just its rounding.";
  d.events = keys;
  return {d};
}

}  // namespace

extern const Rule rule_train_infer_mismatch{
    "TRAIN_INFER_MISMATCH", "Tokenizer / special-token / RoPE settings differ between the runs", run};

}  // namespace parity
