// src/eval/mc.cpp — multiple-choice accuracy of two runs over the same questions, with the paired
// tests users ask for because both runs answer the same questions: exact McNemar on the discordant
// pairs and a paired percentile bootstrap of the accuracy difference (docs/eval.md "Multiple choice").
#include <algorithm>
#include <cmath>
#include <limits>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/eval.h"
#include "parity/json_depth.h"
#include "parity/regular_file.h"

namespace parity::eval {

namespace {

bool json_double(const nlohmann::json& v, double& out) {
  if (v.is_number()) { out = v.get<double>(); return true; }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return end != s.c_str() && *end == '\0';
  }
  return false;
}

// lm-eval's filtered_resps of a loglikelihood request: [[loglik, is_greedy], ...] (numbers or, in
// some versions, their string forms) or [loglik, ...].
bool lm_eval_logliks(const nlohmann::json& resps, std::vector<double>& out) {
  if (!resps.is_array()) return false;
  out.clear();
  for (const auto& r : resps) {
    double v;
    if (r.is_array() && !r.empty() && json_double(r[0], v)) out.push_back(v);
    else if (json_double(r, v)) out.push_back(v);
    else return false;
  }
  return !out.empty();
}

__extension__ typedef unsigned __int128 u128;  // GCC/Clang; -Wpedantic otherwise objects

// SplitMix64 (Steele, Lea, Flood 2014): small, fast, fixed-seed reproducible.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) by the multiply-high method (bias < n / 2^64).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<u128>(next()) * n) >> 64); }
};

}  // namespace

Result<std::vector<McQuestion>> read_mc(const std::filesystem::path& path, std::vector<Status>* problems) {
  PARITY_RETURN_NOT_OK(check_regular_file(path));  // a FIFO would block the open
  std::ifstream in(path);
  if (!in) return Status::IOError(fmt::format("{}: cannot open", path.string()));
  std::vector<McQuestion> qs;
  std::string line;
  int64_t line_no = 0;
  auto problem = [&](std::string msg) {
    if (problems) problems->push_back(Status::Invalid(fmt::format("{}:{}: {}", path.string(), line_no, msg)));
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (std::string deep = json_depth_problem(line); !deep.empty()) { problem(deep + "; skipped"); continue; }
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) { problem("not a JSON object; skipped"); continue; }
    McQuestion q;
    if (j.contains("loglik")) {  // parity.log_choices
      q.id = j.contains("id") ? (j["id"].is_string() ? j["id"].get<std::string>() : j["id"].dump())
                              : std::to_string(qs.size());
      // Like the id, a subject that is not a string is kept as its JSON text (value() threw
      // type_error on e.g. "subject": 3, which ended the whole read as an internal error).
      if (j.contains("subject") && !j["subject"].is_null())
        q.subject = j["subject"].is_string() ? j["subject"].get<std::string>() : j["subject"].dump();
      for (const auto& v : j["loglik"]) { double d; q.loglik.push_back(json_double(v, d) ? d : kNaN); }
      if (j.contains("length") && j["length"].is_array())
        for (const auto& v : j["length"]) { double d; q.length.push_back(json_double(v, d) ? d : kNaN); }
      q.answer = j.contains("answer") && j["answer"].is_number_integer() ? j["answer"].get<int>() : -1;
    } else if (j.contains("filtered_resps") && j.contains("doc_id")) {  // lm-eval --log_samples
      q.id = j["doc_id"].is_string() ? j["doc_id"].get<std::string>() : j["doc_id"].dump();
      if (!lm_eval_logliks(j["filtered_resps"], q.loglik)) { problem("filtered_resps are not log-likelihoods"); continue; }
      if (j.contains("target") && j["target"].is_number_integer()) q.answer = j["target"].get<int>();
      else if (j.contains("target") && j["target"].is_string()) {
        double d;
        // An index outside int (a "target" of "1e300") stays -1: the cast would be undefined.
        if (json_double(j["target"], d) && d >= 0 && d < std::numeric_limits<int>::max()) q.answer = static_cast<int>(d);
      }
      // acc_norm normalises by the byte length of each choice's continuation text (arg_1).
      if (j.contains("arguments") && j["arguments"].is_object()) {
        for (size_t c = 0; c < q.loglik.size(); ++c) {
          auto key = fmt::format("gen_args_{}", c);
          if (j["arguments"].contains(key) && j["arguments"][key].contains("arg_1") && j["arguments"][key]["arg_1"].is_string())
            q.length.push_back(static_cast<double>(j["arguments"][key]["arg_1"].get_ref<const std::string&>().size()));
        }
        if (q.length.size() != q.loglik.size()) q.length.clear();
      }
    } else {
      problem("neither a parity choice record (\"loglik\") nor an lm-eval sample (\"doc_id\", \"filtered_resps\")");
      continue;
    }
    if (q.answer < 0 || q.answer >= static_cast<int>(q.loglik.size())) {
      problem(fmt::format("answer index {} outside the {} choice(s); skipped", q.answer, q.loglik.size()));
      continue;
    }
    qs.push_back(std::move(q));
  }
  if (qs.empty()) return Status::Invalid(fmt::format("{}: no usable question", path.string()));
  return qs;
}

int mc_choice(const McQuestion& q, bool length_normalised) {
  int best = -1;
  double best_v = 0;
  for (size_t c = 0; c < q.loglik.size(); ++c) {
    double v = q.loglik[c];
    if (length_normalised && c < q.length.size() && q.length[c] > 0) v /= q.length[c];
    if (std::isnan(v)) continue;
    if (best < 0 || v > best_v) { best = static_cast<int>(c); best_v = v; }
  }
  return best;
}

double mcnemar_exact_p(int64_t b, int64_t c) {
  const int64_t n = b + c;
  if (n == 0) return 1.0;
  const int64_t k = std::min(b, c);
  // Σ_{i ≤ k} C(n, i) / 2^n in log space (lgamma), summed from the largest term down.
  double tail = 0;
  const double ln2n = n * std::log(2.0);
  for (int64_t i = 0; i <= k; ++i)
    tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) - ln2n);
  return std::min(1.0, 2.0 * tail);
}

BootstrapCI paired_bootstrap(const std::vector<uint8_t>& g, const std::vector<uint8_t>& t, int samples,
                             double level, uint64_t seed) {
  BootstrapCI ci;
  ci.level = level;
  ci.samples = samples;
  ci.seed = seed;
  const size_t n = std::min(g.size(), t.size());
  if (n == 0 || samples < 1) return ci;
  // Per question the paired difference t_i − g_i ∈ {−1, 0, 1}; a resample's statistic is its mean.
  std::vector<int8_t> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<int8_t>(t[i]) - static_cast<int8_t>(g[i]);
  SplitMix64 rng{seed};
  std::vector<double> stats(samples);
  for (int s = 0; s < samples; ++s) {
    int64_t sum = 0;
    for (size_t i = 0; i < n; ++i) sum += d[rng.below(n)];
    stats[s] = static_cast<double>(sum) / n;
  }
  std::sort(stats.begin(), stats.end());
  const double alpha = 1.0 - level;
  ci.low = percentile_sorted(stats, alpha / 2);
  ci.high = percentile_sorted(stats, 1 - alpha / 2);
  return ci;
}

const char* flip_correct_name(const AnswerFlip& f) {
  return f.golden_correct ? (f.target_correct ? "both" : "golden") : (f.target_correct ? "target" : "neither");
}

PairedAccuracy paired_accuracy(const std::string& group, const std::vector<uint8_t>& g,
                               const std::vector<uint8_t>& t, const std::vector<uint8_t>& same_choice,
                               const McOptions& options) {
  PairedAccuracy a;
  a.group = group;
  const size_t n = std::min(g.size(), t.size());
  a.questions = static_cast<int64_t>(n);
  a.mcnemar.n = a.questions;
  int64_t cg = 0, ct = 0;
  for (size_t i = 0; i < n; ++i) {
    cg += g[i];
    ct += t[i];
    if (g[i] && t[i]) ++a.mcnemar.both_correct;
    else if (g[i]) ++a.mcnemar.only_golden;
    else if (t[i]) ++a.mcnemar.only_target;
    else ++a.mcnemar.both_wrong;
  }
  if (n == 0) return a;
  a.golden_acc = static_cast<double>(cg) / n;
  a.target_acc = static_cast<double>(ct) / n;
  a.diff = a.target_acc - a.golden_acc;
  auto se = [n](double p) { return n > 1 ? std::sqrt(p * (1 - p) / (n - 1)) : kNaN; };
  a.golden_stderr = se(a.golden_acc);
  a.target_stderr = se(a.target_acc);
  if (same_choice.size() == n) {
    int64_t same = 0;
    for (uint8_t s : same_choice) same += s;
    a.agreement = static_cast<double>(same) / n;
  }
  a.mcnemar.p_value = mcnemar_exact_p(a.mcnemar.only_golden, a.mcnemar.only_target);
  a.bootstrap = paired_bootstrap(g, t, options.bootstrap_samples, options.level, options.seed);
  a.distinguishable = a.mcnemar.p_value < options.thresholds.alpha;
  const double points = std::fabs(a.diff) * 100.0;
  a.verdict = points <= options.thresholds.pass_points ? Verdict::kPass
              : points <= options.thresholds.fail_points ? Verdict::kWarn
                                                           : Verdict::kFail;
  return a;
}

Result<McResult> compare_mc(const std::vector<McQuestion>& golden, const std::vector<McQuestion>& target,
                            const McOptions& options) {
  McResult r;
  r.length_normalised = options.length_normalised;
  r.thresholds = options.thresholds;
  std::map<std::string, const McQuestion*> by_id;
  for (const auto& q : golden) by_id[q.id] = &q;
  std::map<std::string, bool> seen;
  struct Acc { std::vector<uint8_t> g, t, same; };
  Acc all;
  std::map<std::string, Acc> subjects;
  for (const auto& tq : target) {
    auto it = by_id.find(tq.id);
    if (it == by_id.end()) { r.unmatched.push_back("target:" + tq.id); continue; }
    const McQuestion& gq = *it->second;
    seen[tq.id] = true;
    if (gq.answer != tq.answer || gq.loglik.size() != tq.loglik.size()) {
      r.problems.push_back(Status::Invalid(fmt::format(
          "question {}: the runs disagree on the answer index or the number of choices; skipped", tq.id)));
      continue;
    }
    const int cg = mc_choice(gq, options.length_normalised), ct = mc_choice(tq, options.length_normalised);
    const uint8_t okg = cg == gq.answer, okt = ct == tq.answer, same = cg == ct;
    if (!same)
      r.flips.push_back({tq.id, gq.subject, std::to_string(cg), std::to_string(ct), std::to_string(gq.answer),
                         okg != 0, okt != 0});
    for (Acc* a : {&all, &subjects[gq.subject]}) {
      a->g.push_back(okg);
      a->t.push_back(okt);
      a->same.push_back(same);
    }
  }
  for (const auto& q : golden)
    if (!seen.count(q.id)) r.unmatched.push_back("golden:" + q.id);
  if (all.g.empty()) return Status::Invalid("no question is present in both runs (questions are paired by id)");
  r.overall = paired_accuracy("", all.g, all.t, all.same, options);
  if (subjects.size() > 1 || (subjects.size() == 1 && !subjects.begin()->first.empty()))
    for (const auto& [name, a] : subjects) r.subjects.push_back(paired_accuracy(name, a.g, a.t, a.same, options));
  r.verdict = r.overall.verdict;
  if (r.verdict == Verdict::kPass && (!r.unmatched.empty() || !r.problems.empty())) r.verdict = Verdict::kWarn;
  return r;
}

Result<McResult> compare_mc_files(const std::filesystem::path& golden, const std::filesystem::path& target,
                                  const McOptions& options) {
  std::vector<Status> skipped;  // lines read_mc could not use, both files, in reading order
  auto g = read_mc(golden, &skipped);
  if (!g.ok()) return g.status();
  auto t = read_mc(target, &skipped);
  if (!t.ok()) return t.status();
  auto r = compare_mc(*g, *t, options);
  if (!r.ok()) return r.status();
  r->golden_source = golden.string();
  r->target_source = target.string();
  r->problems.insert(r->problems.begin(), skipped.begin(), skipped.end());
  // A skipped line is a question this comparison may be missing: the result cannot pass outright.
  if (!skipped.empty() && r->verdict == Verdict::kPass) r->verdict = Verdict::kWarn;
  return r;
}

}  // namespace parity::eval
