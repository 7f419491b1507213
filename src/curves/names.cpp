// src/curves/names.cpp — one spelling per logged quantity, so that a Megatron log, a HuggingFace
// trainer_state.json and a parity run line up (docs/curves.md "Names").
#include <cctype>
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

}  // namespace parity::curves
