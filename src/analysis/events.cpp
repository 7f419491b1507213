// Events (one call of a module or op) and op-kind predicates shared by the analysis passes.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "parity/analysis.h"
#include "parity/hash_combine.h"

namespace parity {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

// Lower-case word tokens of an op or module name: split at non-alphanumerics, digits and camel-case
// humps ("LlamaRMSNorm" → llama, rms, norm; "log_softmax" → log, softmax), plus the whole lower-cased
// alphanumeric run ("layernorm"), so that fused spellings still match.
static std::vector<std::string> name_tokens(const std::string& s) {
  std::vector<std::string> out;
  std::string run, word;
  auto flush_word = [&] {
    if (!word.empty()) out.push_back(lower(word));
    word.clear();
  };
  auto flush_run = [&] {
    flush_word();
    if (!run.empty()) out.push_back(lower(run));
    run.clear();
  };
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (!std::isalpha(c)) {
      flush_run();
      continue;
    }
    const bool upper = std::isupper(c);
    const bool prev_lower = i > 0 && std::islower(static_cast<unsigned char>(s[i - 1]));
    const bool next_lower = i + 1 < s.size() && std::islower(static_cast<unsigned char>(s[i + 1]));
    const bool prev_upper = i > 0 && std::isupper(static_cast<unsigned char>(s[i - 1]));
    if (upper && (prev_lower || (prev_upper && next_lower))) flush_word();
    word.push_back(static_cast<char>(c));
    run.push_back(static_cast<char>(c));
  }
  flush_run();
  return out;
}


EventKey event_key(const Record& r) { return EventKey{event_stem(r), r.step, r.rank}; }

size_t EventKeyHash::operator()(const EventKey& k) const noexcept {
  const size_t h = hash_combine(std::hash<std::string_view>{}(k.name), std::hash<int64_t>{}(k.step));
  return hash_combine(h, std::hash<int>{}(k.rank));
}

bool is_sensitive_op(const std::string& op_or_module) {
  // seed 004 §3.1: statistics-bearing normalisations (LayerNorm, RMSNorm, BatchNorm) and exponent-type
  // ops (softmax, log_softmax, exp, log); plus reductions and losses, whose accumulators lose small
  // addends in low precision (seed 004 §1.1 and the safe_rmsnorm pattern of §3.1).
  static const char* const kTokens[] = {"softmax", "softmin", "exp", "log", "logsumexp", "sum",
                                        "mean", "var", "std", "rsqrt", "sqrt", "cumsum", "nll",
                                        "entropy", "crossentropy", "norm", "normalize", "reduce"};
  for (const std::string& t : name_tokens(op_or_module)) {
    if (t.size() >= 4 && t.compare(t.size() - 4, 4, "norm") == 0) return true;  // layernorm, rmsnorm
    for (const char* w : kTokens)
      if (t == w) return true;
  }
  return false;
}

bool is_random_op(const std::string& op_or_module) {
  static const char* const kTokens[] = {"dropout", "bernoulli", "rand", "randn", "randint",
                                        "multinomial", "normal", "uniform", "sample", "randperm"};
  for (const std::string& t : name_tokens(op_or_module)) {
    if (t.find("dropout") != std::string::npos) return true;  // dropout1d, featurealphadropout
    for (const char* w : kTokens)
      if (t == w) return true;
  }
  return false;
}

const char* event_role_name(EventRole r) {
  switch (r) {
    case EventRole::kClean: return "clean";
    case EventRole::kCarrier: return "carrier";
    case EventRole::kSource: return "source";
  }
  return "clean";
}

const char* suspect_kind_name(SuspectKind k) {
  switch (k) {
    case SuspectKind::kInputs: return "inputs";
    case SuspectKind::kParameters: return "parameters";
    case SuspectKind::kSource: return "source";
    case SuspectKind::kStructure: return "structure";
  }
  return "source";
}

}  // namespace parity
