// parity/thresholds.h — the fixed-threshold judgement of one compared pair.
//
// Defaults come from the source documents and anchors (docs/thresholds.md cites each): cosine > 0.999
// (seed 000), KL < 0.005 for bf16 and < 1e-4 for fp16 (seed 000), msprobe's max-abs / relative rules,
// and per-dtype relative-error bounds. Every value can be overridden by a thresholds file (JSON) or flags.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parity/dtype.h"
#include "parity/status.h"

namespace parity {

// Thresholds for one dtype class (the lower-precision dtype of the pair decides which one applies).
// Rules, in the order they are applied (docs/thresholds.md):
//   fail  when cosine < cosine_hard_fail, or (cosine < cosine_fail and max_abs > fail_min_abs),
//         or max_abs > max_abs_fail                                   (msprobe's judgement)
//   warn  when cosine < cosine_pass, kl ≥ kl_pass (logits rows), rel_l2 > rel_l2_warn,
//         or max_rel > max_rel_warn                                   (seed 000 / seed 004 / msprobe)
//   pass  otherwise.
// An infinite value switches a rule off.
// One dtype's fixed thresholds. The member values are the shipped ones for high-precision formats (fp32,
// fp64, integers: rounding far below every bound); default_thresholds() derives the others from them, so a
// default-constructed value is never one that does not ship (issue 32 §3).
struct DTypeThresholds {
  double cosine_pass = 0.999;     // cosine ≥ this to pass (seed 000 "> 0.999")
  double cosine_fail = 0.99;      // cosine < this fails when max_abs > fail_min_abs (msprobe; seed 004 < 0.99 amplifies)
  double cosine_hard_fail = 0.9;  // cosine < this fails whatever the magnitude (msprobe)
  double fail_min_abs = 0.001;    // msprobe: the cosine_fail rule needs MaxAbsErr > 0.001
  double kl_pass = 1e-4;          // KL < this to pass (logits rows only): seed 000's fp16 value / msit's logits
                                  // rule, the strictest sourced bound
  double max_abs_fail = 1.0;      // msprobe: MaxAbsErr > 1 fails
  // msprobe uses MaxRelativeErr > 0.5 only to highlight an API whose output error grew from its inputs; on its
  // own it fires on every element that cancels to ~0 in golden, so it is off (infinite) by default.
  double max_rel_warn = std::numeric_limits<double>::infinity();
  double rel_l2_warn = 1e-2;      // seed 004 inference: relative error "on the order of 1e-2" overall
  double stats_rel_warn = 0.5;    // statistics mode: any of Max/Min/Mean/Norm relative error > this warns (msprobe)
};

// Which judgement has the last word on a row's verdict: the rounding-noise model (default) or these
// fixed thresholds alone (parity/verdict_policy.h, docs/judgement.md "Verdict policy").
enum class VerdictPolicy : uint8_t { kNoiseModel, kFixedThresholds };
const char* verdict_policy_name(VerdictPolicy p);  // "noise-model" | "fixed-thresholds"
std::optional<VerdictPolicy> verdict_policy_from_name(const std::string& name);

struct Thresholds {
  std::map<std::string, DTypeThresholds> by_dtype;  // key: dtype_name() of the lower-precision side
  DTypeThresholds fallback;                          // for dtypes without an entry
  VerdictPolicy policy = VerdictPolicy::kNoiseModel;  // thresholds-file key "policy"
  const DTypeThresholds& for_dtype(DType t) const;
};

// The defaults (docs/thresholds.md).
Thresholds default_thresholds();
// Overlay a JSON thresholds file onto `base` ({"bf16": {"cosine_pass": 0.998}, "default": {...}}).
Result<Thresholds> load_thresholds(const std::string& path, Thresholds base);
// Overlay thresholds given as JSON text (the thresholds-file format) onto `th`; `origin` names the text
// in messages (a path, "--cosine"). Keys: a dtype name (any alias dtype_from_name accepts), "default"
// (the fallback) or "all" (every entry and the fallback, applied first). Unknown keys are errors.
Status apply_thresholds_json(const std::string& text, const std::string& origin, Thresholds& th);

// One threshold set for every dtype (a command-line flag such as --cosine): `field` is a thresholds-file
// field name (cosine_pass, rel_l2_warn, ...), `origin` names it in messages ("--cosine").
struct ThresholdOverride {
  std::string field;
  double value = 0;
  std::string origin;
};
// Everything that decides the thresholds in effect, in the order it applies.
struct ThresholdSources {
  std::string file;                          // a JSON thresholds file overlaying the defaults ("" = none)
  std::vector<ThresholdOverride> overrides;  // then these, each on every dtype and the fallback
  std::optional<VerdictPolicy> policy;       // then this policy, over the file's "policy" key
};
// The thresholds in effect: default_thresholds(), the file, the overrides, the policy. The one path the
// CLI and the Python binding both take (issue 32 §3); a bad file, field or value is an Invalid/IOError
// status naming it.
Result<Thresholds> resolve_thresholds(const ThresholdSources& sources);
// The shipped default of one field, as help texts say it: the fallback's value, then the dtypes whose
// default differs ("0.999; f8_e4m3 0.995, f8_e5m2 0.98"; an infinite bound is "off"). Help texts are
// generated from it, so they cannot restate a value that no longer ships.
std::string threshold_default_text(std::string_view field);

// JSON text of the thresholds in effect (for --show-thresholds and result files).
std::string thresholds_to_json(const Thresholds& t);

// The lower-precision of two dtypes (larger unit roundoff); used to pick thresholds and noise units.
DType lower_precision(DType a, DType b);

}  // namespace parity
