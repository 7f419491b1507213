// config_diff: what differs between the environment fingerprints of two runs, and whether it changes
// numerics (seed 004 §5.2: record CANN/driver/framework versions, mixed-precision switches, precision
// mode, fusion configuration on both sides before comparing).
#include <algorithm>
#include <cctype>
#include <map>

#include <nlohmann/json.hpp>

#include "parity/analysis.h"

namespace parity {
namespace {

using nlohmann::json;

void flatten(const json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  out[prefix.empty() ? "<root>" : prefix] = j.dump();
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool has_any(const std::string& key, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (key.find(w) != std::string::npos) return true;
  return false;
}

// Which kind of setting a key is. Order matters: the first matching category wins.
std::string category_of(const std::string& raw_key) {
  const std::string k = lower(raw_key);
  // The capture's optimizer section (docs/capture.md "Optimizer states"): eps, betas, weight decay, the
  // starting lr of each parameter group — every one changes the numbers of each step.
  if (k.rfind("optimizer.", 0) == 0) return "optimizer";
  if (has_any(k, {"tokenizer", "bos", "eos", "pad_token", "special_token", "rope", "rotary",
                  "max_position", "chat_template", "add_bos", "add_eos", "vocab"}))
    return "model";
  if (has_any(k, {"dtype", "precision", "tf32", "amp", "autocast", "fp16", "bf16", "fp8", "half",
                  "reduced_precision", "allow_fp32", "matmul", "quant", "loss_scale", "flush", "denorm"}))
    return "precision";
  if (has_any(k, {"determinis", "benchmark", "seed", "cublas_workspace", "nondetermin", "cudnn"}))
    return "determinism";
  if (has_any(k, {"version", "cuda", "cann", "driver", "torch", "numpy", "mkl", "blas", "openmp",
                  "num_threads", "library", "backend", "device"}))
    return "version";
  if (has_any(k, {"env", "environ"})) return "environment";
  return "other";
}

}  // namespace

std::vector<ConfigDifference> config_diff(const std::optional<std::string>& golden_json,
                                          const std::optional<std::string>& target_json) {
  std::vector<ConfigDifference> diffs;
  if (!golden_json || !target_json) return diffs;  // nothing to compare against
  std::map<std::string, std::string> g, t;
  const json gj = json::parse(*golden_json, nullptr, /*allow_exceptions=*/false);
  const json tj = json::parse(*target_json, nullptr, /*allow_exceptions=*/false);
  if (gj.is_discarded() || tj.is_discarded()) {
    // One unreadable fingerprint: say so instead of listing every key of the other as a difference.
    diffs.push_back({"<fingerprint>", gj.is_discarded() ? "unparsable JSON" : "readable",
                     tj.is_discarded() ? "unparsable JSON" : "readable", "other", false});
    return diffs;
  }
  flatten(gj, "", g);
  flatten(tj, "", t);
  std::map<std::string, std::pair<std::string, std::string>> all;
  for (const auto& [k, v] : g) all[k].first = v;
  for (const auto& [k, v] : t) all[k].second = v;
  for (const auto& [k, gv_tv] : all) {
    const auto& [gv, tv] = gv_tv;
    if (gv == tv) continue;
    const std::string low = lower(k);
    // Run-specific identities are expected to differ and say nothing about numerics.
    if (has_any(low, {"hostname", "host", "pid", "time", "date", "path", "dir", "run_id", "uuid", "user",
                      "argv", "cwd", "started", "finished", "duration"}) &&
        !has_any(low, {"precision", "dtype", "deterministic", "version"}))
      continue;
    ConfigDifference d;
    d.key = k;
    d.golden = gv.empty() ? "<absent>" : gv;
    d.target = tv.empty() ? "<absent>" : tv;
    d.category = category_of(k);
    d.numeric = d.category != "other";
    diffs.push_back(std::move(d));
  }
  // Numerics-relevant differences first.
  std::stable_sort(diffs.begin(), diffs.end(),
                   [](const ConfigDifference& a, const ConfigDifference& b) { return a.numeric > b.numeric; });
  return diffs;
}

}  // namespace parity
