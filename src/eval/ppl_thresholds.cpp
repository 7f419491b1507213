// The perplexity thresholds of one comparison: the library's choice (PplThresholds' defaults, compare's
// kl_pass of the logits' dtypes) with what the user set over it. The command and the Python binding both
// call this, so neither holds a default or the order of the overrides (issue 32 §3, §5).
#include "parity/eval.h"

namespace parity::eval {

PplThresholds choose_ppl_thresholds(const PplThresholdOverrides& user, const std::string& golden_dtype,
                                    const std::string& target_dtype) {
  PplThresholds th;
  // The seed KL threshold follows the dtype the logits were computed in (the less precise side) unless
  // the user named one.
  if (!user.kld_dtype.empty()) {
    th = default_ppl_thresholds(user.kld_dtype);
    th.kld_source = user.kld_dtype_spelling + user.kld_dtype;
  } else {
    th = ppl_thresholds_for_logits(golden_dtype, target_dtype);
  }
  if (user.ppl_rel) th.ppl_rel = *user.ppl_rel;
  if (user.ppl_diff) th.ppl_diff = *user.ppl_diff;
  if (user.kld) {
    th.kld = *user.kld;
    th.kld_source = user.kld_spelling;
  }
  return th;
}

}  // namespace parity::eval
