// src/eval/lm_eval.cpp — comparison of two lm-evaluation-harness result files task by task (the
// unpaired z-test the files allow), plus paired tests when per-sample logs (--log_samples) are given
// (docs/eval.md "lm-evaluation-harness results").
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
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

// A sample count as lm-eval writes it: a non-negative integer. Anything else — 1e29, 2.5, -3, a string —
// is unknown (-1): converting a double outside int64's range is undefined behaviour (issue 33 §8).
int64_t sample_count(const json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    return u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? static_cast<int64_t>(u) : -1;
  }
  if (v.is_number_integer()) return std::max<int64_t>(v.get<int64_t>(), -1);
  if (v.is_number_float()) {
    const double d = v.get<double>();
    constexpr double kExactIntegers = 9007199254740992.0;  // 2^53: every integer below is a double
    if (d >= 0 && d <= kExactIntegers && d == std::floor(d)) return static_cast<int64_t>(d);
  }
  return -1;
}

int64_t n_effective(const json& j, const std::string& task) {
  if (!j.contains("n-samples") || !j["n-samples"].is_object() || !j["n-samples"].contains(task)) return -1;
  const json& n = j["n-samples"][task];
  if (n.is_object() && n.contains("effective")) return sample_count(n["effective"]);
  return sample_count(n);
}

// lm-eval stamps every file of one run with the same `datetime.now().isoformat()` (':' → '-'), e.g.
// "2024-05-01T12-00-00.123456"; before 0.4.3 it wrote `results.json` and `samples_<task>.jsonl`.
const std::regex& timestamp_re() {
  static const std::regex re(R"(\d{4}-\d{2}-\d{2}T[\d\-.:]+)");
  return re;
}

// "results_2024-05-01T12-00-00.123456.json" → "2024-05-01T12-00-00.123456"; "results.json" → "";
// anything else → nullopt (not a results file).
std::optional<std::string> results_timestamp(const std::filesystem::path& p) {
  if (p.extension() != ".json") return std::nullopt;
  const std::string stem = p.stem().string();
  if (stem == "results") return std::string();
  if (stem.rfind("results_", 0) != 0) return std::nullopt;
  std::string ts = stem.substr(8);
  if (!std::regex_match(ts, timestamp_re())) return std::nullopt;
  return ts;
}

// The results files directly inside `dir`, by timestamp.
std::map<std::string, std::filesystem::path> results_files_in(const std::filesystem::path& dir) {
  std::map<std::string, std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    if (auto ts = results_timestamp(e.path())) out[*ts] = e.path();
  }
  return out;
}

// The samples files next to a results file with timestamp `ts`: "samples_<task>_<ts>.jsonl", or
// "samples_<task>.jsonl" for an unstamped results.json.
std::map<std::string, std::filesystem::path> samples_next_to(const std::filesystem::path& results, const std::string& ts) {
  std::map<std::string, std::filesystem::path> out;
  std::error_code ec;
  const std::string suffix = ts.empty() ? std::string() : "_" + ts;
  for (const auto& e : std::filesystem::directory_iterator(results.parent_path().empty() ? "." : results.parent_path(), ec)) {
    if (!e.is_regular_file(ec) || e.path().extension() != ".jsonl") continue;
    const std::string stem = e.path().stem().string();
    if (stem.rfind("samples_", 0) != 0 || stem.size() <= 8 + suffix.size()) continue;
    if (stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    std::string task = stem.substr(8, stem.size() - 8 - suffix.size());
    // An unstamped results.json must not claim the stamped samples of later runs.
    if (ts.empty() && std::regex_search(task, std::regex(R"(_\d{4}-\d{2}-\d{2}T)"))) continue;
    out[task] = e.path();
  }
  return out;
}

// The task a samples file belongs to, among `tasks` (the tasks of the results): the longest task t with
// a file name "samples_<t>.jsonl" or "samples_<t>_<timestamp>.jsonl"; else the only task, if there is
// one; else "" (the caller names the file).
std::string task_of_samples(const std::filesystem::path& p, const std::set<std::string>& tasks) {
  const std::string stem = p.stem().string();
  std::string best;
  if (stem.rfind("samples_", 0) == 0) {
    const std::string rest = stem.substr(8);
    for (const auto& t : tasks) {
      if (t.size() <= best.size() || rest.rfind(t, 0) != 0) continue;
      if (rest.size() == t.size() ||
          (rest[t.size()] == '_' && std::regex_match(rest.substr(t.size() + 1), timestamp_re())))
        best = t;
    }
  }
  if (best.empty() && tasks.size() == 1) best = *tasks.begin();
  return best;
}

struct Sample {
  std::map<std::string, double> metrics;  // per-sample metric values ("acc": 1.0)
  int choice = -1;                        // argmax of filtered_resps, when log-likelihoods
  bool generation = false;                // a generate_until request: the answer is generated text
  std::string answer;                     // the chosen answer: choice index as text, or the filtered text
  std::string target;                     // the sample's correct answer as lm-eval logged it
  std::string filter;
  std::string doc_id;
};

// lm-eval logs a request's arguments as {"gen_args_0": {"arg_0": context, "arg_1": ...}}; a generation
// request's second argument is its generation settings (an object), a log-likelihood request's the
// continuation (a string).
bool is_generation(const json& j) {
  const auto args = j.find("arguments");
  if (args == j.end() || !args->is_object()) return false;
  const auto first = args->find("gen_args_0");
  if (first == args->end() || !first->is_object()) return false;
  const auto second = first->find("arg_1");
  return second != first->end() && second->is_object();
}

// The filtered generated answer: filtered_resps[0] (a string, or the first string of a list).
std::string generated_answer(const json& j) {
  const auto f = j.find("filtered_resps");
  if (f == j.end()) return "";
  const json* v = &*f;
  while (v->is_array() && !v->empty()) v = &(*v)[0];
  return v->is_string() ? v->get<std::string>() : v->dump();
}

// The argmax of a log-likelihood sample's filtered_resps ([ll, is_greedy] pairs, numbers or their
// text); -1 when one is not a number.
int loglik_choice(const json& j) {
  if (!j.contains("filtered_resps") || !j["filtered_resps"].is_array()) return -1;
  double best = 0;
  int idx = 0, choice = -1;
  for (const auto& r : j["filtered_resps"]) {
    const json& v = r.is_array() && !r.empty() ? r[0] : r;
    double d;
    bool ok = false;
    if (v.is_number()) { d = v.get<double>(); ok = true; }
    else if (v.is_string()) { char* e; d = std::strtod(v.get_ref<const std::string&>().c_str(), &e); ok = *e == '\0'; }
    if (!ok) return -1;
    if (choice < 0 || d > best) { best = d; choice = idx; }
    ++idx;
  }
  return choice;
}

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
    s.generation = is_generation(j);
    if (s.generation) {
      s.answer = generated_answer(j);
    } else {
      s.choice = loglik_choice(j);
      if (s.choice >= 0) s.answer = std::to_string(s.choice);
    }
    if (j.contains("target")) s.target = j["target"].is_string() ? j["target"].get<std::string>() : j["target"].dump();
    s.doc_id = j["doc_id"].is_string() ? j["doc_id"].get<std::string>() : j["doc_id"].dump();
    const std::string key = s.doc_id + "\x1f" + s.filter;
    out[key] = std::move(s);
  }
  return out;
}

// Whether the logged answer is what `metric` scores: a generation task's filtered text decides all its
// metrics; a log-likelihood task's raw argmax decides `acc` (acc_norm's length normalisation is not
// logged, so its flips are not listed).
bool answer_decides(const Sample& s, const std::string& metric) {
  return !s.answer.empty() && (s.generation || metric == "acc");
}

// doc_ids in numeric order when both are numbers ("2" before "10"), else as text.
bool doc_id_less(const std::string& a, const std::string& b) {
  auto digits = [](const std::string& x) {
    return !x.empty() && x.find_first_not_of("0123456789") == std::string::npos;
  };
  if (digits(a) && digits(b) && a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

}  // namespace

Result<LmEvalOutput> find_lm_eval_output(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    PARITY_RETURN_NOT_OK(check_regular_file(path));
    LmEvalOutput out{path, {}};
    if (auto ts = results_timestamp(path)) out.samples = samples_next_to(path, *ts);
    return out;
  }
  // lm-eval writes into <output_path>/<model_name>/; accept either level.
  std::vector<std::pair<std::filesystem::path, std::map<std::string, std::filesystem::path>>> holders;
  if (auto here = results_files_in(path); !here.empty()) holders.emplace_back(path, std::move(here));
  std::vector<std::filesystem::path> subdirs;
  for (const auto& e : std::filesystem::directory_iterator(path, ec))
    if (e.is_directory(ec)) subdirs.push_back(e.path());
  std::sort(subdirs.begin(), subdirs.end());
  for (const auto& d : subdirs)
    if (auto files = results_files_in(d); !files.empty()) holders.emplace_back(d, std::move(files));
  if (holders.empty())
    return Status::Invalid(fmt::format(
        "{}: a directory without lm-eval results (no results_<timestamp>.json or results.json in it or in a "
        "<model_name>/ directory below it)", path.string()));
  if (holders.size() > 1) {
    std::vector<std::string> names;
    for (const auto& h : holders) names.push_back(h.first.string());
    return Status::Invalid(fmt::format("{}: results of several runs in {}; name one of these directories",
                                       path.string(), fmt::join(names, ", ")));
  }
  const auto& [ts, results] = *holders.front().second.rbegin();  // the newest run
  return LmEvalOutput{results, samples_next_to(results, ts)};
}

namespace {

using SampleLog = std::map<std::string, Sample>;                        // doc_id + filter → sample
using SamplesByTask = std::map<std::string, std::pair<SampleLog, SampleLog>>;  // task → (run A, run B)

struct SamplePairs {
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> files;
  std::vector<std::string> tasks;  // parallel to files
};

// The explicit --samples pairs, each assigned the task its file names name.
SamplePairs explicit_sample_pairs(const std::vector<std::filesystem::path>& samples_a,
                                  const std::vector<std::filesystem::path>& samples_b,
                                  const std::set<std::string>& shared, std::vector<Status>& problems) {
  SamplePairs out;
  for (size_t i = 0; i < samples_a.size(); ++i) {
    const std::string ta = task_of_samples(samples_a[i], shared), tb = task_of_samples(samples_b[i], shared);
    const std::string task = ta.empty() ? tb : ta;
    if (task.empty()) {
      problems.push_back(Status::Invalid(fmt::format(
          "--samples {} {}: no task of both results files is named by these files (name them samples_<task>.jsonl); "
          "not used", samples_a[i].string(), samples_b[i].string())));
      continue;
    }
    if (!tb.empty() && !ta.empty() && ta != tb)
      problems.push_back(Status::Invalid(fmt::format("--samples {} and {} name different tasks ({} vs {}); paired as {}",
                                                     samples_a[i].string(), samples_b[i].string(), ta, tb, task)));
    out.files.emplace_back(samples_a[i], samples_b[i]);
    out.tasks.push_back(task);
  }
  return out;
}

// The per-sample logs each run wrote next to its results, paired by task; a task logged by one run only
// gets the unpaired z-test, and a problem says so.
SamplePairs found_sample_pairs(const LmEvalOutput& out_a, const LmEvalOutput& out_b, const std::set<std::string>& shared,
                               std::vector<Status>& problems) {
  SamplePairs out;
  for (const auto& [task, pa] : out_a.samples) {
    if (!shared.count(task)) continue;
    auto pb = out_b.samples.find(task);
    if (pb == out_b.samples.end()) {
      problems.push_back(Status::Invalid(fmt::format(
          "{}: {} has per-sample logs only in {}; unpaired z-test only", task, pa.filename().string(),
          out_a.results.string())));
      continue;
    }
    out.files.emplace_back(pa, pb->second);
    out.tasks.push_back(task);
  }
  for (const auto& [task, pb] : out_b.samples)
    if (shared.count(task) && !out_a.samples.count(task))
      problems.push_back(Status::Invalid(fmt::format(
          "{}: {} has per-sample logs only in {}; unpaired z-test only", task, pb.filename().string(),
          out_b.results.string())));
  return out;
}

// One metric of one task from the two results files, with lm-eval's unpaired z-test.
LmEvalMetric metric_from_results(const std::string& task, const std::string& key, const json& a, const json& b,
                                 const LmEvalOptions& options) {
  const json& ta = a["results"][task];
  const json& tb = b["results"][task];
  const size_t comma = key.find(',');  // "acc,none"
  LmEvalMetric lm;
  lm.task = task;
  lm.metric = key.substr(0, comma);
  lm.filter = comma == std::string::npos ? "" : key.substr(comma + 1);
  lm.a = ta[key].get<double>();
  lm.b = number_or_nan(tb, key);
  const std::string se_key = comma == std::string::npos ? lm.metric + "_stderr" : lm.metric + "_stderr," + lm.filter;
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
  return lm;
}

// The metric paired sample by sample (McNemar, bootstrap) when its per-sample values are 0/1, and the
// samples whose answer flipped.
void pair_metric_samples(LmEvalMetric& lm, const std::pair<SampleLog, SampleLog>& logs, const LmEvalOptions& options,
                         std::vector<Status>& problems) {
  std::vector<uint8_t> g, t, same;
  bool binary = true;
  int64_t unpaired = 0;
  for (const auto& [id, sa] : logs.first) {
    if (sa.filter != lm.filter && !lm.filter.empty()) continue;
    const auto sb = logs.second.find(id);
    if (sb == logs.second.end()) { ++unpaired; continue; }
    auto va = sa.metrics.find(lm.metric);
    auto vb = sb->second.metrics.find(lm.metric);
    if (va == sa.metrics.end() || vb == sb->second.metrics.end()) continue;
    for (double v : {va->second, vb->second}) binary &= (v == 0.0 || v == 1.0);
    g.push_back(va->second == 1.0);
    t.push_back(vb->second == 1.0);
    same.push_back(!sa.answer.empty() && sa.answer == sb->second.answer);
    lm.flips_listed |= answer_decides(sa, lm.metric);
    if (answer_decides(sa, lm.metric) && sa.answer != sb->second.answer)
      lm.flips.push_back({sa.doc_id, "", sa.answer, sb->second.answer, sa.target, va->second == 1.0, vb->second == 1.0});
  }
  std::stable_sort(lm.flips.begin(), lm.flips.end(),
                   [](const AnswerFlip& x, const AnswerFlip& y) { return doc_id_less(x.id, y.id); });
  if (unpaired > 0)
    problems.push_back(Status::Invalid(fmt::format("{}: {} sample(s) of run A have no counterpart in run B", lm.task, unpaired)));
  if (!g.empty() && binary) {
    lm.paired = paired_accuracy(lm.task, g, t, same, options.mc);
    lm.distinguishable = lm.paired->distinguishable;
  } else if (!g.empty()) {
    problems.push_back(Status::Unsupported(fmt::format(
        "{} {}: per-sample values are not 0/1; paired tests apply to accuracy-type metrics only", lm.task, lm.metric)));
  }
}

// |Δ| in points against the thresholds.
Verdict grade_points(double diff, const AccuracyThresholds& th) {
  const double points = std::fabs(diff) * 100.0;
  return std::isnan(points) ? Verdict::kError
         : points <= th.pass_points ? Verdict::kPass
         : points <= th.fail_points ? Verdict::kWarn
                                    : Verdict::kFail;
}

// Every wanted metric of every task both results files hold.
void compare_metrics(const json& a, const json& b, const SamplesByTask& samples, const LmEvalOptions& options,
                     LmEvalResult& r) {
  const std::set<std::string> wanted(options.metrics.begin(), options.metrics.end());
  const json& ra = a["results"];
  const json& rb = b["results"];
  for (auto it = ra.begin(); it != ra.end(); ++it) {
    const std::string& task = it.key();
    if (!rb.contains(task) || !it->is_object()) continue;
    for (auto m = it->begin(); m != it->end(); ++m) {
      const std::string& key = m.key();
      if (!wanted.count(key.substr(0, key.find(','))) || !m->is_number() || !rb[task].contains(key)) continue;
      LmEvalMetric lm = metric_from_results(task, key, a, b, options);
      if (auto s = samples.find(task); s != samples.end()) pair_metric_samples(lm, s->second, options, r.problems);
      lm.verdict = grade_points(lm.diff, options.mc.thresholds);
      r.metrics.push_back(std::move(lm));
    }
  }
}

}  // namespace

Result<LmEvalResult> compare_lm_eval(const std::filesystem::path& a_path, const std::filesystem::path& b_path,
                                     const std::vector<std::filesystem::path>& samples_a,
                                     const std::vector<std::filesystem::path>& samples_b,
                                     const LmEvalOptions& options) {
  if (samples_a.size() != samples_b.size())
    return Status::Invalid("--samples takes pairs of files (one per run, same task)");
  PARITY_ASSIGN_OR_RETURN(LmEvalOutput out_a, find_lm_eval_output(a_path));
  PARITY_ASSIGN_OR_RETURN(LmEvalOutput out_b, find_lm_eval_output(b_path));
  PARITY_ASSIGN_OR_RETURN(json a, load_json(out_a.results));
  PARITY_ASSIGN_OR_RETURN(json b, load_json(out_b.results));
  LmEvalResult r;
  r.a_source = out_a.results.string();
  r.b_source = out_b.results.string();
  r.thresholds = options.mc.thresholds;
  const json& ra = a["results"];
  const json& rb = b["results"];
  std::set<std::string> shared;
  for (auto it = ra.begin(); it != ra.end(); ++it) {
    if (rb.contains(it.key())) shared.insert(it.key());
    else r.only_a.push_back(it.key());
  }
  for (auto it = rb.begin(); it != rb.end(); ++it)
    if (!ra.contains(it.key())) r.only_b.push_back(it.key());

  // Per-sample logs by task: the explicit pairs, else the files each run wrote next to its results.
  const SamplePairs pairs = samples_a.empty() ? found_sample_pairs(out_a, out_b, shared, r.problems)
                                              : explicit_sample_pairs(samples_a, samples_b, shared, r.problems);
  SamplesByTask samples;
  for (size_t i = 0; i < pairs.files.size(); ++i) {
    PARITY_ASSIGN_OR_RETURN(auto sa, read_samples(pairs.files[i].first, r.problems));
    PARITY_ASSIGN_OR_RETURN(auto sb, read_samples(pairs.files[i].second, r.problems));
    r.samples.push_back({pairs.tasks[i], pairs.files[i].first.string(), pairs.files[i].second.string()});
    samples[pairs.tasks[i]] = {std::move(sa), std::move(sb)};
  }
  compare_metrics(a, b, samples, options, r);
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
