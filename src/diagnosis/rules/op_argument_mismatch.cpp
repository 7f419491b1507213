// OP_ARGUMENT_MISMATCH: a matched op was called with different non-tensor arguments in the two runs —
// `layer_norm: eps 1e-05 → 1.0`, `gelu: approximate 'none' → 'tanh'`, `softmax: dim -1 → 1`. Capture
// records every op call's scalar arguments (docs/dump-format.md "args"); a difference there is the most
// direct evidence of a configuration or code change that parity can give, and names the fix.
//
// Not a difference: tensor arguments (their values are compared as rows), dtype arguments (a
// precision change, which the noise model and CONFIG_DIFF judge), and floats within 1 % of each other
// (scalars computed from data, such as a scale taken with .item(), move with rounding).
#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>
#include <set>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;
using nlohmann::json;

// Positional parameter names of the ops whose arguments users most often get wrong (torch's
// signatures; a Tensor method's receiver is the first positional, as `input`).
const std::vector<std::string>* positional_names(const std::string& op) {
  static const std::map<std::string, std::vector<std::string>> names = {
      {"layer_norm", {"input", "normalized_shape", "weight", "bias", "eps"}},
      {"rms_norm", {"input", "normalized_shape", "weight", "eps"}},
      {"group_norm", {"input", "num_groups", "weight", "bias", "eps"}},
      {"batch_norm", {"input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps"}},
      {"instance_norm", {"input", "running_mean", "running_var", "weight", "bias", "use_input_stats", "momentum", "eps"}},
      {"softmax", {"input", "dim", "_stacklevel", "dtype"}},
      {"log_softmax", {"input", "dim", "_stacklevel", "dtype"}},
      {"gelu", {"input", "approximate"}},
      {"leaky_relu", {"input", "negative_slope", "inplace"}},
      {"elu", {"input", "alpha", "inplace"}},
      {"dropout", {"input", "p", "training", "inplace"}},
      {"scaled_dot_product_attention", {"query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale"}},
      {"conv1d", {"input", "weight", "bias", "stride", "padding", "dilation", "groups"}},
      {"conv2d", {"input", "weight", "bias", "stride", "padding", "dilation", "groups"}},
      {"embedding", {"input", "weight", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse"}},
      {"clamp", {"input", "min", "max"}},
      {"pow", {"input", "exponent"}},
      {"cross_entropy", {"input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing"}},
      {"masked_fill", {"input", "mask", "value"}},
      {"masked_fill_", {"input", "mask", "value"}},
  };
  auto it = names.find(op);
  return it == names.end() ? nullptr : &it->second;
}

bool is_placeholder(const json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.rfind("<", 0) == 0) return true;  // "<tensor f32 [2, 3]>", "<Generator>": not a value
  // A dtype ("torch.bfloat16"): a precision change, judged by the noise model and CONFIG_DIFF.
  return s.rfind("torch.", 0) == 0 && (s.find("float") != std::string::npos || s.find("int") != std::string::npos ||
                                       s.find("bool") != std::string::npos || s.find("half") != std::string::npos);
}

// The largest finite value of some float dtype (finfo(dtype).max: 3.4e38, 65504, 448, ...).
bool is_dtype_extreme(double v) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (const FloatFormat* f = float_format(static_cast<DType>(i)); f != nullptr && std::fabs(v) == f->max_finite)
      return true;
  return false;
}

bool same_value(const json& g, const json& t) {
  // A placeholder on either side: a tensor (whose values are compared as its own row) or a dtype.
  if (is_placeholder(g) || is_placeholder(t)) return true;
  if (g.is_number_float() || t.is_number_float()) {
    if (!g.is_number() || !t.is_number()) return false;
    const double a = g.get<double>(), b = t.get<double>();
    // torch.finfo(dtype).min in each run's own dtype (a mask's "minus infinity": −3.4e38 in fp32, −65504 in
    // fp16) is one value spelled per dtype (docs/metrics.md "Dtype extremes").
    if (is_dtype_extreme(a) && is_dtype_extreme(b) && (a < 0) == (b < 0)) return true;
    return std::fabs(a - b) <= 0.01 * std::max(std::fabs(a), std::fabs(b));
  }
  if (g.is_array() && t.is_array()) {
    if (g.size() != t.size()) return false;
    for (size_t i = 0; i < g.size(); ++i)
      if (!same_value(g[i], t[i])) return false;
    return true;
  }
  return g == t;
}

std::string spell(const json& v) {
  if (v.is_null()) return "<absent>";
  if (v.is_string()) return "'" + v.get<std::string>() + "'";
  return v.dump();
}

// The module attribute capture found a positional argument to be (its record's "names", docs/dump-format.md),
// on either side: "" when neither names it.
std::string attribute_of(const json& g, const json& t, size_t i) {
  for (const json* side : {&g, &t}) {
    const auto names = side->find("names");
    if (names == side->end() || !names->is_object()) continue;
    const auto it = names->find(std::to_string(i));
    if (it != names->end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

bool names_an_epsilon(std::string attribute) {
  std::transform(attribute.begin(), attribute.end(), attribute.begin(), [](unsigned char c) { return std::tolower(c); });
  return attribute == "eps" || attribute.find("epsilon") != std::string::npos || attribute.find("_eps") != std::string::npos ||
         attribute.rfind("eps_", 0) == 0;
}

// "eps 1e-06 → 1.0" for argument i of `op`: torch's parameter name, else the module attribute capture found
// it to be ("eps 1e-06 → 1.0 (the module's variance_epsilon, argument 1)" for HF's RMSNorm `add`), else
// its position.
std::string argument_difference(const std::string& op, const json& g, const json& t, size_t i, const json& gv,
                                const json& tv) {
  if (const std::vector<std::string>* names = positional_names(op); names && i < names->size())
    return fmt::format("{} {} → {}", (*names)[i], spell(gv), spell(tv));
  const std::string attribute = attribute_of(g, t, i);
  if (attribute.empty()) return fmt::format("argument {} {} → {}", i, spell(gv), spell(tv));
  return fmt::format("{} {} → {} (the module's {}, argument {})", names_an_epsilon(attribute) ? "eps" : attribute,
                     spell(gv), spell(tv), attribute, i);
}

// "eps 1e-05 → 1.0" for every argument that differs.
std::vector<std::string> argument_differences(const std::string& op, const json& g, const json& t) {
  std::vector<std::string> out;
  const json empty = json::array();
  const json& ga = g.contains("args") ? g["args"] : empty;
  const json& ta = t.contains("args") ? t["args"] : empty;
  for (size_t i = 0; i < std::max(ga.size(), ta.size()); ++i) {
    const json gv = i < ga.size() ? ga[i] : json(nullptr);
    const json tv = i < ta.size() ? ta[i] : json(nullptr);
    if (same_value(gv, tv)) continue;
    out.push_back(argument_difference(op, g, t, i, gv, tv));
  }
  const json none = json::object();
  const json& gk = g.contains("kwargs") ? g["kwargs"] : none;
  const json& tk = t.contains("kwargs") ? t["kwargs"] : none;
  std::set<std::string> keys;
  for (auto it = gk.begin(); it != gk.end(); ++it) keys.insert(it.key());
  for (auto it = tk.begin(); it != tk.end(); ++it) keys.insert(it.key());
  for (const std::string& k : keys) {
    const json gv = gk.contains(k) ? gk[k] : json(nullptr);
    const json tv = tk.contains(k) ? tk[k] : json(nullptr);
    if (!same_value(gv, tv)) out.push_back(fmt::format("{} {} → {}", k, spell(gv), spell(tv)));
  }
  return out;
}

const EventError* event_of_row(const DiagnosisContext& ctx, const CompareRow& row) {
  const std::string name = event_name(*row.golden);
  for (const EventError& e : ctx.analysis->events)
    if (e.name == name && e.step == row.golden->step && e.rank == row.golden->rank) return &e;
  return nullptr;
}

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  if (!ctx.golden_source || !ctx.target_source) return {};
  std::vector<std::string> effective, inert, events;
  for (const CompareRow& row : ctx.result->rows) {
    const Record& g = *row.golden;
    const Record& t = *row.target;
    if (g.op.empty() || g.op != t.op || g.role != "output" || g.index != 0 || g.direction != "forward") continue;
    if (row.match != MatchKind::kExact) continue;  // only the same call site can be compared argument by argument
    const std::string gtext = ctx.golden_source->op_arguments_json(g);
    const std::string ttext = ctx.target_source->op_arguments_json(t);
    if (gtext.empty() || ttext.empty() || gtext == ttext) continue;
    const json gj = json::parse(gtext, nullptr, false), tj = json::parse(ttext, nullptr, false);
    if (gj.is_discarded() || tj.is_discarded() || !gj.is_object() || !tj.is_object()) continue;
    const std::vector<std::string> diffs = argument_differences(g.op, gj, tj);
    if (diffs.empty()) continue;
    std::string line = fmt::format("{}: ", event_name(g));
    for (size_t i = 0; i < diffs.size(); ++i) line += (i ? ", " : "") + diffs[i];
    // An argument change whose output is beyond rounding changed the numbers; one within noise did not
    // (a `training` flag of an op that is the identity here, say).
    // The same inputs, other arguments, another output: the argument made the difference. With inputs
    // that differ too, the output difference may be theirs.
    const EventError* e = event_of_row(ctx, row);
    const bool inputs_agree = e && !std::isnan(e->input_ratio) && e->input_ratio <= ctx.options.noise.noise_max;
    if ((row.noise == NoiseClass::kStructural || row.noise == NoiseClass::kElevated) && inputs_agree) {
      effective.push_back(line + fmt::format(" (its output differs by {})", units(row.noise_ratio)));
      events.push_back(event_name(g));
    } else {
      if (inputs_agree) inert.push_back(line + fmt::format(" (its output agrees: {})", units(row.noise_ratio)));
    }
  }
  if (effective.empty() && inert.empty()) return {};
  Diagnosis d;
  d.strength = effective.empty() ? 1 : 3;
  // An argument that changed the output is a cause; one whose output agrees anyway is context.
  d.severity = effective.empty() ? Severity::kInfo : Severity::kWarn;
  d.events = events;
  append_limited(d.evidence, effective, 8);
  append_limited(d.evidence, inert, effective.empty() ? 8 : 3);
  d.advice =
      "Make the target call these ops with the golden's arguments (a norm's eps, an activation's "
      "approximation, a softmax's dim, ...): the arguments are recorded by capture, so each line above is the "
      "exact call site to fix — unless the change was intended, in which case the golden should change too.";
  return {d};
}

}  // namespace

extern const Rule rule_op_argument_mismatch{"OP_ARGUMENT_MISMATCH",
                                           "Ops are called with different arguments in the two runs", run};

}  // namespace parity
