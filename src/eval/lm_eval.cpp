// src/eval/lm_eval.cpp — comparison of two lm-evaluation-harness result files task by task (the
// unpaired z-test the files allow), plus paired tests when per-sample logs (--log_samples) are given
// (docs/eval.md "lm-evaluation-harness results").
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/eval.h"
#include "parity/json_depth.h"
#include "parity/regular_file.h"

namespace parity::eval {

namespace {

using json = nlohmann::json;

Result<json> load_json(const std::filesystem::path& p) {
  PARITY_RETURN_NOT_OK(check_regular_file(p));  // a FIFO would block the open
  std::ifstream in(p);
  if (!in) return Status::IOError(fmt::format("{}: cannot open", p.string()));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (const std::string deep = json_depth_problem(text); !deep.empty())
    return Status::Invalid(fmt::format("{}: {}", p.string(), deep));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::Invalid(fmt::format("{}: not valid JSON", p.string()));
  if (!j.is_object() || !j.contains("results") || !j["results"].is_object())
    return Status::Invalid(fmt::format("{}: no \"results\" object (not an lm-evaluation-harness results file)", p.string()));
  return j;
}

double number_or_nan(const json& obj, const std::string& key) {
  if (!obj.contains(key)) return kNaN;
  const json& v = obj[key];
  if (v.is_number()) return v.get<double>();
  return kNaN;  // "N/A" and friends
}

int64_t n_effective(const json& j, const std::string& task) {
  if (!j.contains("n-samples") || !j["n-samples"].contains(task)) return -1;
  const json& n = j["n-samples"][task];
  if (n.is_object() && n.contains("effective") && n["effective"].is_number()) return n["effective"].get<int64_t>();
  if (n.is_number()) return n.get<int64_t>();
  return -1;
}

// "samples_mmlu_anatomy_2024-05-01T12-00-00.123456.jsonl" → "mmlu_anatomy".
std::string task_from_samples_name(const std::filesystem::path& p) {
  std::string stem = p.stem().string();
  static const std::regex with_date(R"(^samples_(.+?)_(\d{4}-\d{2}-\d{2}T[\d\-.:]+)$)");
  static const std::regex plain(R"(^samples_(.+)$)");
  std::smatch m;
  if (std::regex_match(stem, m, with_date)) return m[1].str();
  if (std::regex_match(stem, m, plain)) return m[1].str();
  return stem;
}

struct Sample {
  std::map<std::string, double> metrics;  // per-sample metric values ("acc": 1.0)
  int choice = -1;                        // argmax of filtered_resps, when log-likelihoods
  std::string filter;
};

Result<std::map<std::string, Sample>> read_samples(const std::filesystem::path& p, std::vector<Status>& problems) {
  PARITY_RETURN_NOT_OK(check_regular_file(p));  // a FIFO would block the open
  std::ifstream in(p);
  if (!in) return Status::IOError(fmt::format("{}: cannot open", p.string()));
  std::map<std::string, Sample> out;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (const std::string deep = json_depth_problem(line); !deep.empty()) {
      problems.push_back(Status::Invalid(fmt::format("{}:{}: {}; skipped", p.string(), line_no, deep)));
      continue;
    }
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("doc_id")) {
      problems.push_back(Status::Invalid(fmt::format("{}:{}: not an lm-eval sample (no doc_id); skipped", p.string(), line_no)));
      continue;
    }
    Sample s;
    s.filter = j.value("filter", std::string("none"));
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it->is_number() && it.key() != "doc_id") s.metrics[it.key()] = it->get<double>();
    if (j.contains("filtered_resps") && j["filtered_resps"].is_array()) {
      double best = 0;
      int idx = 0;
      for (const auto& r : j["filtered_resps"]) {
        const json& v = r.is_array() && !r.empty() ? r[0] : r;
        double d;
        bool ok = false;
        if (v.is_number()) { d = v.get<double>(); ok = true; }
        else if (v.is_string()) { char* e; d = std::strtod(v.get_ref<const std::string&>().c_str(), &e); ok = *e == '\0'; }
        if (!ok) { s.choice = -1; break; }
        if (s.choice < 0 || d > best) { best = d; s.choice = idx; }
        ++idx;
      }
    }
    std::string id = j["doc_id"].is_string() ? j["doc_id"].get<std::string>() : j["doc_id"].dump();
    out[id + "\x1f" + s.filter] = std::move(s);
  }
  return out;
}

}  // namespace

Result<LmEvalResult> compare_lm_eval(const std::filesystem::path& a_path, const std::filesystem::path& b_path,
                                     const std::vector<std::filesystem::path>& samples_a,
                                     const std::vector<std::filesystem::path>& samples_b,
                                     const LmEvalOptions& options) {
  if (samples_a.size() != samples_b.size())
    return Status::Invalid("--samples takes pairs of files (one per run, same task)");
  PARITY_ASSIGN_OR_RETURN(json a, load_json(a_path));
  PARITY_ASSIGN_OR_RETURN(json b, load_json(b_path));
  LmEvalResult r;
  r.a_source = a_path.string();
  r.b_source = b_path.string();
  r.thresholds = options.mc.thresholds;
  const json& ra = a["results"];
  const json& rb = b["results"];
  for (auto it = ra.begin(); it != ra.end(); ++it)
    if (!rb.contains(it.key())) r.only_a.push_back(it.key());
  for (auto it = rb.begin(); it != rb.end(); ++it)
    if (!ra.contains(it.key())) r.only_b.push_back(it.key());

  // Per-sample logs by task.
  std::map<std::string, std::pair<std::map<std::string, Sample>, std::map<std::string, Sample>>> samples;
  for (size_t i = 0; i < samples_a.size(); ++i) {
    std::string ta = task_from_samples_name(samples_a[i]), tb = task_from_samples_name(samples_b[i]);
    if (ta != tb)
      r.problems.push_back(Status::Invalid(fmt::format("--samples {} and {} name different tasks ({} vs {}); paired as given",
                                                       samples_a[i].string(), samples_b[i].string(), ta, tb)));
    PARITY_ASSIGN_OR_RETURN(auto sa, read_samples(samples_a[i], r.problems));
    PARITY_ASSIGN_OR_RETURN(auto sb, read_samples(samples_b[i], r.problems));
    samples[ta] = {std::move(sa), std::move(sb)};
  }

  const std::set<std::string> wanted(options.metrics.begin(), options.metrics.end());
  for (auto it = ra.begin(); it != ra.end(); ++it) {
    const std::string& task = it.key();
    if (!rb.contains(task) || !it->is_object()) continue;
    const json& ta = *it;
    const json& tb = rb[task];
    for (auto m = ta.begin(); m != ta.end(); ++m) {
      const std::string& key = m.key();  // "acc,none"
      size_t comma = key.find(',');
      std::string metric = key.substr(0, comma);
      std::string filter = comma == std::string::npos ? "" : key.substr(comma + 1);
      if (!wanted.count(metric) || !m->is_number() || !tb.contains(key)) continue;
      LmEvalMetric lm;
      lm.task = task;
      lm.metric = metric;
      lm.filter = filter;
      lm.a = m->get<double>();
      lm.b = number_or_nan(tb, key);
      std::string se_key = comma == std::string::npos ? metric + "_stderr" : metric + "_stderr," + filter;
      lm.a_stderr = number_or_nan(ta, se_key);
      lm.b_stderr = number_or_nan(tb, se_key);
      lm.n_a = n_effective(a, task);
      lm.n_b = n_effective(b, task);
      lm.diff = lm.b - lm.a;
      const double se = std::sqrt(lm.a_stderr * lm.a_stderr + lm.b_stderr * lm.b_stderr);
      if (se > 0) {
        lm.z = lm.diff / se;
        lm.p_value = std::erfc(std::fabs(lm.z) / std::sqrt(2.0));
      } else if (lm.diff == 0) {
        lm.z = 0;
        lm.p_value = 1;
      }
      lm.distinguishable = lm.p_value < options.mc.thresholds.alpha;
      auto s = samples.find(task);
      if (s != samples.end()) {
        std::vector<uint8_t> g, t, same;
        bool binary = true;
        int64_t unpaired = 0;
        for (const auto& [id, sa] : s->second.first) {
          if (sa.filter != filter && !filter.empty()) continue;
          const auto sb = s->second.second.find(id);
          if (sb == s->second.second.end()) { ++unpaired; continue; }
          auto va = sa.metrics.find(metric);
          auto vb = sb->second.metrics.find(metric);
          if (va == sa.metrics.end() || vb == sb->second.metrics.end()) continue;
          for (double v : {va->second, vb->second}) binary &= (v == 0.0 || v == 1.0);
          g.push_back(va->second == 1.0);
          t.push_back(vb->second == 1.0);
          same.push_back(sa.choice >= 0 && sa.choice == sb->second.choice);
        }
        if (unpaired > 0)
          r.problems.push_back(Status::Invalid(fmt::format("{}: {} sample(s) of run A have no counterpart in run B", task, unpaired)));
        if (!g.empty() && binary) {
          lm.paired = paired_accuracy(task, g, t, same, options.mc);
          lm.distinguishable = lm.paired->distinguishable;
        } else if (!g.empty()) {
          r.problems.push_back(Status::Unsupported(fmt::format(
              "{} {}: per-sample values are not 0/1; paired tests apply to accuracy-type metrics only", task, metric)));
        }
      }
      const double points = std::fabs(lm.diff) * 100.0;
      lm.verdict = std::isnan(points) ? Verdict::kError
                   : points <= options.mc.thresholds.pass_points ? Verdict::kPass
                   : points <= options.mc.thresholds.fail_points ? Verdict::kWarn
                                                                 : Verdict::kFail;
      r.metrics.push_back(std::move(lm));
    }
  }
  if (r.metrics.empty())
    return Status::Invalid(fmt::format("{} and {} share no task with an accuracy-type metric ({})", r.a_source,
                                       r.b_source, fmt::join(options.metrics, ", ")));
  Verdict v = Verdict::kPass;
  for (const auto& m : r.metrics) v = std::max(v, m.verdict);
  if (v == Verdict::kPass && (!r.only_a.empty() || !r.only_b.empty() || !r.problems.empty())) v = Verdict::kWarn;
  r.verdict = v;
  return r;
}

}  // namespace parity::eval
