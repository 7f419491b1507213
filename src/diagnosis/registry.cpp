// The diagnosis rules, in evaluation order. Adding a rule = src/diagnosis/rules/<code>.cpp defining
// `extern const Rule rule_<code>` plus its line here (docs/diagnosis.md documents each one).
#include "parity/diagnosis.h"

namespace parity {

extern const Rule rule_config_diff;
extern const Rule rule_op_argument_mismatch;
extern const Rule rule_train_infer_mismatch;
extern const Rule rule_input_mismatch;
extern const Rule rule_weight_mismatch;
extern const Rule rule_overflow;
extern const Rule rule_grad_overflow;
extern const Rule rule_grad_underflow;
extern const Rule rule_flush_to_zero;
extern const Rule rule_nondeterminism;
extern const Rule rule_quant_sensitive_layer;
extern const Rule rule_low_precision_sensitive_op;
extern const Rule rule_outliers;
extern const Rule rule_drift_after_steps;
extern const Rule rule_update_lost_to_rounding;
extern const Rule rule_rank_inconsistent;
extern const Rule rule_accumulation_noise;
extern const Rule rule_loss_scale;
extern const Rule rule_decision_flip;
extern const Rule rule_structure_diff;
extern const Rule rule_no_cause_found;  // last: it reads every other rule's diagnoses

const std::vector<Rule>& registered_rules() {
  static const std::vector<Rule> rules = {
      rule_config_diff,
      rule_op_argument_mismatch,
      rule_train_infer_mismatch,
      rule_input_mismatch,
      rule_weight_mismatch,
      rule_overflow,
      rule_grad_overflow,
      rule_grad_underflow,
      rule_flush_to_zero,
      rule_nondeterminism,
      rule_quant_sensitive_layer,
      rule_low_precision_sensitive_op,
      rule_outliers,
      rule_drift_after_steps,
      rule_update_lost_to_rounding,
      rule_rank_inconsistent,
      rule_accumulation_noise,
      rule_loss_scale,
      rule_decision_flip,
      rule_structure_diff,
      rule_no_cause_found,
  };
  return rules;
}

}  // namespace parity
