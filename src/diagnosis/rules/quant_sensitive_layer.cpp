// QUANT_SENSITIVE_LAYER: an event computed with a quantised dtype (int8 / fp8) in the target creates
// structural error. Seed 004 §3.4 / §4.2: quantising the attention path (QKV projections, QK^T, softmax)
// raises perplexity far more than FFN layers; exclude sensitive layers from quantisation.
#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

bool quantised(DType t) {
  return t == DType::kI8 || t == DType::kU8 || t == DType::kF8E4M3 || t == DType::kF8E5M2;
}

bool name_says_quant(const std::string& s) {
  // "Quantizable" names a layer that could be quantised (torch's NonDynamicallyQuantizableLinear is every
  // nn.MultiheadAttention's out_proj), not one that is.
  if (s.find("uantizable") != std::string::npos) return false;
  return s.find("quant") != std::string::npos || s.find("Quant") != std::string::npos ||
         s.find("int8") != std::string::npos || s.find("fp8") != std::string::npos;
}

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::vector<std::string> lines, events;
  for (const EventError& e : ctx.analysis->events) {
    if (e.role != EventRole::kSource || !e.explained_by.empty()) continue;  // the innermost source speaks
    bool q = name_says_quant(e.op) || name_says_quant(e.module);
    for (size_t i : e.rows) {
      const CompareRow& row = ctx.result->rows[i];
      if (quantised(row.target->dtype) && !quantised(row.golden->dtype)) q = true;
    }
    // Quantisation often lives in modules only the target has (a fake-quantiser wrapping a layer's weight
    // or its input): look at what the target alone recorded inside this event's module.
    std::string target_only;
    if (!e.module.empty() && e.module != "<root>" && e.module != "<global>") {
      for (const Record& r : ctx.result->unmatched_target) {
        const bool inside = r.module == e.module ||
                            (r.module.size() > e.module.size() && r.module.starts_with(e.module) &&
                             r.module[e.module.size()] == '.');
        if (inside && r.step == e.step && r.rank == e.rank && (quantised(r.dtype) || name_says_quant(r.module))) {
          target_only = fmt::format("{} ({}), recorded in the target only", r.module, quantised(r.dtype)
                                                                                       ? "holds " + std::string(dtype_name(r.dtype)) + " tensors"
                                                                                       : "a quantiser");
          if (quantised(r.dtype)) break;
        }
      }
    }
    if (!q && target_only.empty()) continue;
    const bool attention = e.name.find("attn") != std::string::npos || e.name.find("attention") != std::string::npos ||
                           e.name.find("q_proj") != std::string::npos || e.name.find("k_proj") != std::string::npos ||
                           is_sensitive_op(e.op);
    lines.push_back(fmt::format("{}: output {} from inputs {} (×{:.3g}){}{}", e.name, units(e.output_ratio),
                                units(e.input_ratio), e.amplification, attention ? " — attention path" : "",
                                target_only.empty() ? "" : "; quantised by " + target_only));
    events.push_back(e.name);
  }
  if (events.empty()) return {};
  Diagnosis d;
  d.strength = 2;
  d.severity = Severity::kWarn;
  d.events = events;
  append_limited(d.evidence, lines, 8);
  d.advice =
      "Exclude these layers from quantisation (keep them in fp16/bf16), starting with the attention path "
      "(QKV projections, QK^T, softmax); prefer per-channel weight scales and check the activation range "
      "across inputs before choosing a per-tensor scale (seed 004 §3.4, §4.2).";
  return {d};
}

}  // namespace

extern const Rule rule_quant_sensitive_layer{"QUANT_SENSITIVE_LAYER", "A quantised layer creates the error", run};

}  // namespace parity
