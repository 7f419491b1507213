// src/curves/read_text.cpp — training logs as text: one record per matching line, through the
// Megatron-LM or DeepSpeed preset or a user regex (docs/curves.md "Presets").
#include <fstream>
#include <regex>

#include "parity/name_pattern.h"

#include <fmt/format.h>

#include "curves/readers.h"

namespace parity::curves::detail {

namespace {

// std::regex matches recursively, about one stack frame per character: a matching line of ~50 KB
// overflowed the stack. No training log prints a record this long; longer lines are skipped and
// counted in a note.
constexpr size_t kMaxTextLine = 8192;

// A number as these logs print it: 6.543210E+00, 1.500E-04, 65536.0, nan, inf.
const char* const kNumber = R"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?(?:nan|inf)\b)";

// Megatron-LM (megatron/training/training.py training_log): "iteration N/ M | key: value | ...".
// Both parsers return false for a line that is not theirs; `error` is set when it is theirs but unusable.
bool parse_megatron(const std::string& line, SeriesBuilder& b, std::string& error) {
  static const std::regex head(R"(iteration\s+([0-9]+)\s*/\s*[0-9]+\s*\|)", std::regex::icase);
  static const std::regex field(std::string(R"(^\s*([A-Za-z][^:|]*?)\s*:\s*()") + kNumber + R"()\s*$)",
                                std::regex::icase);
  std::smatch m;
  if (!std::regex_search(line, m, head)) return false;
  int64_t step;
  if (!parse_step(m[1].str(), step)) {
    error = fmt::format("iteration {} is out of range", m[1].str());
    return false;
  }
  std::string rest = m.suffix().str();
  size_t start = 0;
  bool any = false;
  while (start <= rest.size()) {
    size_t bar = rest.find('|', start);
    std::string cell = rest.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    std::smatch f;
    if (std::regex_match(cell, f, field)) {
      double v;
      if (parse_number(f[2].str(), v)) {
        b.add(f[1].str(), -1, step, v);
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
  static const std::regex step_re(R"(\bsteps?\s*[=:]\s*([0-9]+))", std::regex::icase);
  static const std::regex rank_re(R"(\[Rank\s+([0-9]+)\])", std::regex::icase);
  static const std::regex pair_re(std::string(R"(([A-Za-z][A-Za-z0-9_/.\- ()]*?)\s*[=:]\s*\[?\(?\s*()") +
                                      kNumber + ")",
                                  std::regex::icase);
  std::smatch m;
  if (!std::regex_search(line, m, step_re)) return false;
  int64_t step;
  if (!parse_step(m[1].str(), step)) {
    error = fmt::format("step {} is out of range", m[1].str());
    return false;
  }
  int rank = -1;
  std::smatch r;
  if (std::regex_search(line, r, rank_re) && !parse_rank(r[1].str(), rank)) {
    error = fmt::format("rank {} is out of range", r[1].str());
    return false;
  }
  // Leading bracketed prefixes ("[2024-05-01 10:00:01,000] [INFO] [logging.py:96:log_dist] [Rank 0]")
  // hold timestamps and source locations, not metrics.
  static const std::regex prefix_re(R"(^(\s*\[[^\]]*\])+)");
  const std::string body = std::regex_replace(line, prefix_re, "", std::regex_constants::format_first_only);
  bool any = false;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), pair_re); it != std::sregex_iterator(); ++it) {
    std::string key(trim((*it)[1].str()));
    std::string lower;
    for (char c : key) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (lower == "step" || lower == "steps" || lower == "rank" || lower == "skipped") continue;
    double v;
    if (parse_number((*it)[2].str(), v)) {
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
  if (!long_note.empty()) run.notes.push_back(fmt::format("{}: {}", path.string(), long_note));
  b.finish(run);
  return Status::OK();
}

}  // namespace parity::curves::detail
