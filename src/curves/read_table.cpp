// src/curves/read_table.cpp — CSV/TSV and JSON-lines curve files: a step column plus any number of
// numeric metric columns (docs/curves.md "Inputs").
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include "curves/readers.h"
#include "parity/json_depth.h"

namespace parity::curves::detail {

namespace {

const char* const kStepKeys[] = {"step", "global_step", "iteration", "iter", "_step", "Step"};
const char* const kRankKeys[] = {"rank", "global_rank", "local_rank"};

// Split one CSV line on `sep`, honouring double quotes ("a,b" and "" escapes).
std::vector<std::string> split_csv(const std::string& line, char sep) {
  std::vector<std::string> cells;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') { cur.push_back('"'); ++i; }
      else if (c == '"') quoted = false;
      else cur.push_back(c);
    } else if (c == '"') {
      quoted = true;
    } else if (c == sep) {
      cells.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur.push_back(c);
    }
  }
  cells.push_back(cur);
  return cells;
}

int find_key(const std::vector<std::string>& header, const std::string& wanted,
             const char* const* defaults, size_t n_defaults) {
  if (!wanted.empty()) {
    for (size_t i = 0; i < header.size(); ++i)
      if (std::string(trim(header[i])) == wanted) return static_cast<int>(i);
    return -2;  // asked for but absent
  }
  for (size_t d = 0; d < n_defaults; ++d)
    for (size_t i = 0; i < header.size(); ++i)
      if (std::string(trim(header[i])) == defaults[d]) return static_cast<int>(i);
  return -1;
}

// Flatten nested objects of a JSON line: {"train": {"loss": 1}} → "train/loss".
void flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::pair<std::string, const nlohmann::json*>>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string key = prefix.empty() ? it.key() : prefix + "/" + it.key();
    if (it->is_object()) flatten(*it, key, out);
    else out.emplace_back(key, &*it);
  }
}

bool json_number(const nlohmann::json& v, double& out) {
  if (v.is_number()) { out = v.get<double>(); return true; }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    return parse_number(s, out) && !s.empty() && (std::isnan(out) || std::isinf(out));
  }
  return false;
}

// A JSON number as a step (or rank): false when it is not integral-valued within range.
bool json_step(const nlohmann::json& v, int64_t& out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    out = static_cast<int64_t>(u);
    return u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  }
  if (v.is_number_integer()) { out = v.get<int64_t>(); return true; }
  return v.is_number() && step_from_double(v.get<double>(), out);
}

bool json_rank(const nlohmann::json& v, int& out) {
  int64_t r;
  if (!json_step(v, r) || r < std::numeric_limits<int>::min() || r > std::numeric_limits<int>::max()) return false;
  out = static_cast<int>(r);
  return true;
}

}  // namespace

Status read_csv(const std::filesystem::path& path, const ReadOptions& options, CurveRun& run) {
  std::ifstream in(path);
  if (!in) return Status::IOError(fmt::format("{}: cannot open", path.string()));
  std::string line;
  if (!std::getline(in, line)) return Status::Invalid(fmt::format("{}: empty file", path.string()));
  while (!line.empty() && line[0] == '#') {  // comment lines (e.g. a schema line) before the header
    if (!std::getline(in, line)) return Status::Invalid(fmt::format("{}: no header row", path.string()));
  }
  const std::string ext = path.extension().string();
  char sep = (ext == ".tsv" || (line.find('\t') != std::string::npos && line.find(',') == std::string::npos))
                 ? '\t' : ',';
  std::vector<std::string> header = split_csv(line, sep);
  int step_col = find_key(header, options.step_key, kStepKeys, std::size(kStepKeys));
  if (step_col == -2)
    return Status::Invalid(fmt::format("{}: no column named '{}' (columns: {})", path.string(),
                                       options.step_key, fmt::join(header, ", ")));
  int rank_col = find_key(header, "", kRankKeys, std::size(kRankKeys));
  SeriesBuilder builder;
  int64_t row = 0, line_no = 1, skipped = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    std::vector<std::string> cells = split_csv(line, sep);
    int64_t step = row++;
    if (step_col >= 0) {
      double s;
      if (step_col >= static_cast<int>(cells.size()) || !parse_number(cells[step_col], s) || !std::isfinite(s)) {
        run.problems.push_back(Status::Invalid(
            fmt::format("{}:{}: step cell is not a number; row skipped", path.string(), line_no)));
        continue;
      }
      if (!step_from_double(s, step)) {
        run.problems.push_back(Status::Invalid(
            fmt::format("{}:{}: step {} is out of range; row skipped", path.string(), line_no, trim(cells[step_col]))));
        continue;
      }
    }
    int rank = -1;
    if (rank_col >= 0 && rank_col < static_cast<int>(cells.size())) {
      double r;
      if (parse_number(cells[rank_col], r) && std::isfinite(r) && !rank_from_double(r, rank)) {
        run.problems.push_back(Status::Invalid(
            fmt::format("{}:{}: rank {} is out of range; row skipped", path.string(), line_no, trim(cells[rank_col]))));
        continue;
      }
    }
    for (size_t c = 0; c < cells.size() && c < header.size(); ++c) {
      if (static_cast<int>(c) == step_col || static_cast<int>(c) == rank_col) continue;
      double v;
      if (trim(cells[c]).empty()) continue;
      if (!parse_number(cells[c], v)) { ++skipped; continue; }
      builder.add(std::string(trim(header[c])), rank, step, v);
    }
  }
  if (skipped > 0)
    run.notes.push_back(fmt::format("{}: {} non-numeric cell(s) ignored", path.string(), skipped));
  builder.finish(run);
  return Status::OK();
}

Status read_jsonl(const std::filesystem::path& path, const ReadOptions& options, CurveRun& run) {
  std::ifstream in(path);
  if (!in) return Status::IOError(fmt::format("{}: cannot open", path.string()));
  SeriesBuilder builder;
  std::string line;
  int64_t line_no = 0, row = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    if (const std::string deep = json_depth_problem(line); !deep.empty()) {
      run.problems.push_back(Status::Invalid(fmt::format("{}:{}: {}; line skipped", path.string(), line_no, deep)));
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      run.problems.push_back(Status::Invalid(
          fmt::format("{}:{}: not a JSON object; line skipped", path.string(), line_no)));
      continue;
    }
    std::vector<std::pair<std::string, const nlohmann::json*>> fields;
    flatten(j, "", fields);
    int64_t step = row++;
    bool have_step = false;
    std::string step_key;
    auto is_step_key = [&](const std::string& k) {
      if (!options.step_key.empty()) return k == options.step_key;
      for (const char* s : kStepKeys)
        if (k == s) return true;
      return false;
    };
    // The first matching step key in kStepKeys order wins.
    const nlohmann::json* step_value = nullptr;
    if (options.step_key.empty()) {
      for (const char* s : kStepKeys) {
        for (auto& [k, v] : fields)
          if (k == s && v->is_number()) { step_value = v; have_step = true; step_key = k; break; }
        if (have_step) break;
      }
    } else {
      for (auto& [k, v] : fields)
        if (k == options.step_key && v->is_number()) { step_value = v; have_step = true; step_key = k; }
      if (!have_step) {
        run.problems.push_back(Status::Invalid(fmt::format("{}:{}: no numeric '{}'; line skipped",
                                                           path.string(), line_no, options.step_key)));
        continue;
      }
    }
    if (step_value && !json_step(*step_value, step)) {
      run.problems.push_back(Status::Invalid(fmt::format("{}:{}: {} {} is out of range; line skipped", path.string(),
                                                         line_no, step_key, step_value->dump())));
      continue;
    }
    int rank = -1;
    bool bad_rank = false;
    for (auto& [k, v] : fields)
      for (const char* r : kRankKeys)
        if (k == r && v->is_number_integer() && !json_rank(*v, rank)) {
          run.problems.push_back(Status::Invalid(
              fmt::format("{}:{}: {} {} is out of range; line skipped", path.string(), line_no, k, v->dump())));
          bad_rank = true;
        }
    if (bad_rank) continue;
    for (auto& [k, v] : fields) {
      if (k == step_key || is_step_key(k)) continue;
      bool is_rank = false;
      for (const char* r : kRankKeys) is_rank |= (k == r);
      if (is_rank) continue;
      double value;
      if (json_number(*v, value)) builder.add(k, rank, step, value);
    }
  }
  builder.finish(run);
  return Status::OK();
}

Status read_hf_trainer_state(const std::filesystem::path& path, CurveRun& run) {
  std::ifstream in(path);
  if (!in) return Status::IOError(fmt::format("{}: cannot open", path.string()));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (const std::string deep = json_depth_problem(text); !deep.empty())
    return Status::Invalid(fmt::format("{}: {}", path.string(), deep));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Invalid(fmt::format("{}: not valid JSON", path.string()));
  if (!j.is_object() || !j.contains("log_history") || !j["log_history"].is_array())
    return Status::Invalid(fmt::format("{}: no \"log_history\" array (not a HuggingFace trainer_state.json)",
                                       path.string()));
  SeriesBuilder builder;
  size_t index = 0;
  for (const auto& entry : j["log_history"]) {
    ++index;
    if (!entry.is_object() || !entry.contains("step") || !entry["step"].is_number()) {
      run.problems.push_back(Status::Invalid(
          fmt::format("{}: log_history[{}] has no numeric \"step\"; skipped", path.string(), index - 1)));
      continue;
    }
    int64_t step;
    if (!json_step(entry["step"], step)) {
      run.problems.push_back(Status::Invalid(fmt::format("{}: log_history[{}]: step {} is out of range; skipped",
                                                         path.string(), index - 1, entry["step"].dump())));
      continue;
    }
    for (auto it = entry.begin(); it != entry.end(); ++it) {
      // The closing summary entry's train_loss / train_runtime / ... are averages over the whole
      // training, not values at that step.
      static const std::set<std::string> summary_keys = {"train_loss", "train_runtime", "train_samples_per_second",
                                                         "train_steps_per_second", "total_flos"};
      if (it.key() == "step" || it.key() == "epoch" || summary_keys.count(it.key())) continue;
      double v;
      if (json_number(*it, v)) builder.add(it.key(), -1, step, v);
    }
  }
  builder.finish(run);
  return Status::OK();
}

}  // namespace parity::curves::detail
