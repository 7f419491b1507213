// src/curves/names.cpp — one spelling per logged quantity, so that a Megatron log, a HuggingFace
// trainer_state.json and a parity run line up (docs/curves.md "Names").
#include <algorithm>
#include <cctype>
#include <cmath>
#include <vector>
#include <string>
#include <unordered_map>

#include "parity/curves.h"

namespace parity::curves {

std::string canonical_metric(std::string_view raw) {
  std::string s;
  s.reserve(raw.size());
  for (char c : raw) {
    unsigned char u = static_cast<unsigned char>(c);
    s.push_back(std::isspace(u) ? '_' : static_cast<char>(std::tolower(u)));
  }
  while (!s.empty() && s.front() == '_') s.erase(s.begin());
  while (!s.empty() && s.back() == '_') s.pop_back();
  for (const char* prefix : {"train/", "training/", "train_"}) {
    std::string p = prefix;
    // "train_loss" → "loss" but keep names that are only the prefix.
    if (s.size() > p.size() && s.compare(0, p.size(), p) == 0) {
      std::string rest = s.substr(p.size());
      if (p != "train_" || rest == "loss" || rest == "grad_norm" || rest == "learning_rate") s = rest;
      break;
    }
  }
  static const std::unordered_map<std::string, std::string> aliases = {
      {"lm_loss", "loss"},           {"training_loss", "loss"},     {"lm-loss", "loss"},
      {"grad_norm", "grad_norm"},    {"gradient_norm", "grad_norm"}, {"grad-norm", "grad_norm"},
      {"global_grad_norm", "grad_norm"},
      {"learning_rate", "lr"},       {"learning-rate", "lr"},       {"lr", "lr"},
      {"loss_scale", "loss_scale"},  {"scaler", "loss_scale"},      {"loss_scaler", "loss_scale"},
      {"loss-scale", "loss_scale"},  {"cur_scale", "loss_scale"},
      {"elapsed_time_per_iteration_(ms)", "iter_time_ms"},
      {"samples_per_second", "samples_per_second"},
      {"train_samples_per_second", "samples_per_second"},
      {"tokens_per_sec", "tokens_per_sec"}, {"tokens_per_second", "tokens_per_sec"},
  };
  auto it = aliases.find(s);
  return it == aliases.end() ? s : it->second;
}

bool is_performance_metric(std::string_view m) {
  auto has = [m](std::string_view part) { return m.find(part) != std::string_view::npos; };
  return has("time") || has("throughput") || has("per_sec") || has("per_second") || has("samples/sec") ||
         has("tflops") || has("runtime") || has("memory") || has("mem_") || has("flos");
}

namespace {

bool has_part(std::string_view m, std::initializer_list<std::string_view> parts) {
  for (std::string_view p : parts)
    if (m.find(p) != std::string_view::npos) return true;
  return false;
}

// value = a·step + b exactly (to fp64 rounding of the logged numbers), a ≠ 0, over ≥ 3 finite points.
bool affine_in_step(const Series& s) {
  std::vector<std::pair<double, double>> pts;
  for (size_t i = 0; i < s.steps.size(); ++i)
    if (std::isfinite(s.values[i])) pts.emplace_back(static_cast<double>(s.steps[i]), s.values[i]);
  if (pts.size() < 3) return false;
  const auto [x0, y0] = pts.front();
  const auto [x1, y1] = pts.back();
  if (x1 == x0 || y1 == y0) return false;
  const double a = (y1 - y0) / (x1 - x0);
  for (const auto& [x, y] : pts) {
    const double expect = y0 + a * (x - x0);
    // 1e-9 relative: logged counters are exact or printed with ≥ 10 significant digits
    if (std::fabs(y - expect) > 1e-9 * std::max({std::fabs(y), std::fabs(y0), std::fabs(y1)})) return false;
  }
  return true;
}

}  // namespace

bool is_counter_metric(const Series& series) {
  const std::string_view m = series.metric;
  if (has_part(m, {"consumed", "samples_seen", "tokens_seen", "num_tokens", "batch_size", "epoch",
                   "global_step", "iteration", "num_samples", "seen"}) ||
      m == "step" || m == "steps" || m == "iter" || m == "samples" || m == "tokens")
    return true;
  // A linear warm-up makes the learning rate affine in the step; training quantities are never counters.
  if (has_part(m, {"loss", "norm", "lr", "learning_rate", "scale", "acc", "ppl", "perplexity", "reward"}))
    return false;
  return affine_in_step(series);
}

}  // namespace parity::curves
