// src/curves/read_text.cpp — training logs as text: one record per matching line, through the
// Megatron-LM or DeepSpeed preset or a user regex (docs/curves.md "Presets").
#include <cctype>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>

#include "parity/name_pattern.h"

#include <fmt/format.h>

#include "curves/readers.h"

namespace parity::curves::detail {

namespace {

// No training log prints a record longer than this; longer lines are skipped and counted in a problem (the
// patterns are linear-time RE2, parity/name_pattern.h: the cap bounds work and memory, not the stack).
constexpr size_t kMaxTextLine = 8192;

// A number as these logs print it: 6.543210E+00, 1.500E-04, 65536.0, nan, inf.
const char* const kNumber = R"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?(?:nan|inf)\b)";

// The presets' patterns, compiled once (they are constants: a failure is a bug, caught by every test).
const NamePattern& preset_pattern(const std::string& re) {
  static std::map<std::string, NamePattern> compiled;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto it = compiled.find(re);
  if (it == compiled.end()) {
    Result<NamePattern> p = NamePattern::compile(re, /*case_insensitive=*/true);
    if (!p.ok()) throw std::logic_error("text-log preset pattern: " + p.status().message());
    it = compiled.emplace(re, std::move(*p)).first;
  }
  return it->second;
}

std::string group(const PatternMatch& m, size_t i) { return m.groups[i] ? std::string(*m.groups[i]) : std::string(); }

// Megatron-LM (megatron/training/training.py training_log): "iteration N/ M | key: value | ...".
// Both parsers return false for a line that is not theirs; `error` is set when it is theirs but unusable.
bool parse_megatron(const std::string& line, SeriesBuilder& b, std::string& error) {
  static const NamePattern& head = preset_pattern(R"(iteration\s+([0-9]+)\s*/\s*[0-9]+\s*\|)");
  static const NamePattern& field = preset_pattern(std::string(R"(^\s*([A-Za-z][^:|]*?)\s*:\s*()") + kNumber + R"()\s*$)");
  PatternMatch m;
  if (!head.find(line, 0, m)) return false;
  int64_t step;
  if (!parse_step(group(m, 0), step)) {
    error = fmt::format("iteration {} is out of range", group(m, 0));
    return false;
  }
  const std::string rest = line.substr(m.end);
  size_t start = 0;
  bool any = false;
  PatternMatch f;
  while (start <= rest.size()) {
    size_t bar = rest.find('|', start);
    std::string cell = rest.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    if (field.find(cell, 0, f)) {
      double v;
      if (parse_number(group(f, 1), v)) {
        b.add(group(f, 0), -1, step, v);
        any = true;
      }
    }
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return any;
}

// DeepSpeed-style: "[Rank 0] step=100, skipped=0, lr=[0.0001], ..." or "steps: 100 loss: 2.34 ...".
bool parse_deepspeed(const std::string& line, SeriesBuilder& b, std::string& error) {
  static const NamePattern& step_re = preset_pattern(R"(\bsteps?\s*[=:]\s*([0-9]+))");
  static const NamePattern& rank_re = preset_pattern(R"(\[Rank\s+([0-9]+)\])");
  static const NamePattern& pair_re =
      preset_pattern(std::string(R"(([A-Za-z][A-Za-z0-9_/.\- ()]*?)\s*[=:]\s*\[?\(?\s*()") + kNumber + ")");
  // Leading bracketed prefixes ("[2024-05-01 10:00:01,000] [INFO] [logging.py:96:log_dist] [Rank 0]")
  // hold timestamps and source locations, not metrics.
  static const NamePattern& prefix_re = preset_pattern(R"(^(?:\s*\[[^\]]*\])+)");
  PatternMatch m;
  if (!step_re.find(line, 0, m)) return false;
  int64_t step;
  if (!parse_step(group(m, 0), step)) {
    error = fmt::format("step {} is out of range", group(m, 0));
    return false;
  }
  int rank = -1;
  if (rank_re.find(line, 0, m) && !parse_rank(group(m, 0), rank)) {
    error = fmt::format("rank {} is out of range", group(m, 0));
    return false;
  }
  const std::string body = prefix_re.find(line, 0, m) ? line.substr(m.end) : line;
  bool any = false;
  for (size_t pos = 0; pos <= body.size() && pair_re.find(body, pos, m); pos = m.end > m.begin ? m.end : m.end + 1) {
    std::string key(trim(group(m, 0)));
    std::string lower;
    for (char c : key) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (lower == "step" || lower == "steps" || lower == "rank" || lower == "skipped") continue;
    double v;
    if (parse_number(group(m, 1), v)) {
      b.add(key, rank, step, v);
      any = true;
    }
  }
  return any;
}

}  // namespace

Status read_text_log(const std::filesystem::path& path, const ReadOptions& options, CurveRun& run) {
  std::ifstream in(path);
  if (!in) return Status::IOError(fmt::format("{}: cannot open", path.string()));
  const std::string& preset = options.preset;
  if (!preset.empty() && preset != "megatron" && preset != "deepspeed")
    return Status::Invalid(fmt::format("unknown text preset '{}' (megatron, deepspeed)", preset));
  std::optional<NamePattern> custom;
  int step_group = -1;
  if (!options.regex.empty()) {
    Result<NamePattern> re = NamePattern::compile(options.regex);
    if (!re.ok()) return re.status().WithContext("--regex");
    custom = std::move(*re);
    for (size_t i = 0; i < options.regex_fields.size(); ++i)
      if (options.regex_fields[i] == "step") step_group = static_cast<int>(i) + 1;
    if (step_group < 0)
      return Status::Invalid("--fields must name the capture group holding the step ('step')");
    if (static_cast<size_t>(custom->group_count()) < options.regex_fields.size())
      return Status::Invalid(fmt::format("--regex has {} capture group(s) but --fields names {}",
                                         custom->group_count(), options.regex_fields.size()));
  }
  SeriesBuilder b;
  std::vector<std::optional<std::string>> groups;
  std::string line;
  int64_t matched = 0, line_no = 0, too_long = 0, first_too_long = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.size() > kMaxTextLine) {
      if (too_long++ == 0) first_too_long = line_no;
      continue;
    }
    if (custom) {
      if (!custom->search_groups(line, groups)) continue;
      const std::string step_text = groups[static_cast<size_t>(step_group) - 1].value_or("");
      double s;
      int64_t step;
      if (!parse_number(step_text, s) || !std::isfinite(s)) continue;
      if (!step_from_double(s, step)) {
        run.problems.push_back(Status::Invalid(fmt::format("{}:{}: step {} is out of range; line skipped",
                                                           path.string(), line_no, step_text)));
        continue;
      }
      bool any = false;
      for (size_t i = 0; i < options.regex_fields.size(); ++i) {
        if (static_cast<int>(i) + 1 == step_group || !groups[i]) continue;
        double v;
        if (parse_number(*groups[i], v)) {
          b.add(options.regex_fields[i], -1, step, v);
          any = true;
        }
      }
      matched += any;
      continue;
    }
    bool ok = false;
    std::string error;
    if (preset.empty() || preset == "megatron") ok = parse_megatron(line, b, error);
    if (!ok && error.empty() && (preset.empty() || preset == "deepspeed")) ok = parse_deepspeed(line, b, error);
    if (!error.empty())
      run.problems.push_back(Status::Invalid(fmt::format("{}:{}: {}; line skipped", path.string(), line_no, error)));
    matched += ok;
  }
  const std::string long_note =
      too_long == 0 ? std::string()
                    : fmt::format("{} line(s) longer than {} bytes skipped (the first is line {})", too_long,
                                  kMaxTextLine, first_too_long);
  if (matched == 0)
    return Status::Invalid(fmt::format(
        "{}: no line matched {}{}", path.string(),
        custom ? "--regex" : (preset.empty() ? "the megatron or deepspeed preset" : "the " + preset + " preset"),
        long_note.empty() ? "" : "; " + long_note));
  // A skipped line may have held a step's values: a part that could not be read, so the verdict cannot be
  // PASS (a problem makes it at least WARN), not a harmless oddity.
  if (!long_note.empty())
    run.problems.push_back(Status::Invalid(fmt::format("{}: {}; their values, if any, are not compared", path.string(), long_note)));
  b.finish(run);
  return Status::OK();
}

}  // namespace parity::curves::detail
