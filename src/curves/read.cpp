// src/curves/read.cpp — format detection and dispatch for curve inputs (docs/curves.md "Inputs").
#include <future>
#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "curves/readers.h"
#include "parity/dump.h"
#include "parity/regular_file.h"

namespace parity::curves {

const std::vector<std::string>& curve_formats() {
  static const std::vector<std::string> f = {"parity-run", "tensorboard", "hf-trainer-state",
                                             "csv", "jsonl", "text"};
  return f;
}

namespace {

bool has_tfevents(const std::filesystem::path& dir) {
  std::error_code ec;
  // Every status query with an error_code: an entry that is a symlink loop (ELOOP) is not a file, and the
  // throwing overloads turned it into an internal error (issue 33 §8).
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code entry_ec;
    if (it->is_regular_file(entry_ec) && it->path().filename().string().find("tfevents") != std::string::npos)
      return true;
  }
  return false;
}

bool json_has_log_history(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.find("\"log_history\"") != std::string::npos ||
         file.filename() == "trainer_state.json";
}

// A curve file must be a regular file: opening a FIFO for reading would block until a writer comes.
Status refuse_non_regular(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) ? Status::OK() : check_regular_file(path);
}

Result<std::string> detect(std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return Status::NotFound(fmt::format("{}: no such file or directory", path.string()));
  PARITY_RETURN_NOT_OK(refuse_non_regular(path));
  if (std::filesystem::is_directory(path, ec)) {
    if (dump::is_run_directory(path)) return std::string("parity-run");
    if (std::filesystem::exists(path / "trainer_state.json", ec)) {
      path /= "trainer_state.json";
      return std::string("hf-trainer-state");
    }
    if (has_tfevents(path)) return std::string("tensorboard");
    return Status::Invalid(fmt::format(
        "{}: directory is neither a parity run, a TensorBoard log directory nor a HuggingFace checkpoint "
        "(use --format)", path.string()));
  }
  std::string name = path.filename().string();
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  if (name.find("tfevents") != std::string::npos) return std::string("tensorboard");
  if (ext == ".csv" || ext == ".tsv") return std::string("csv");
  if (ext == ".jsonl" || ext == ".ndjson") return std::string("jsonl");
  if (ext == ".json") {
    if (json_has_log_history(path)) return std::string("hf-trainer-state");
    return std::string("jsonl");  // a single JSON object per line is also valid JSON for one line
  }
  if (ext == ".log" || ext == ".txt" || ext == ".out" || ext.empty()) return std::string("text");
  return Status::Invalid(fmt::format("{}: cannot tell the curve format from the name (use --format: {})",
                                     path.string(), fmt::join(curve_formats(), ", ")));
}

// The format to read `path` as: --format, else detected; a --regex makes it a text log. May point
// `path` at the trainer_state.json inside a checkpoint folder.
Result<std::string> choose_format(std::filesystem::path& path, const ReadOptions& options) {
  std::string format = options.format;
  if (format.empty()) {
    PARITY_ASSIGN_OR_RETURN(format, detect(path));
  } else if (std::find(curve_formats().begin(), curve_formats().end(), format) == curve_formats().end()) {
    return Status::Invalid(fmt::format("unknown curve format '{}' (formats: {})", format,
                                       fmt::join(curve_formats(), ", ")));
  } else if (std::error_code ec; format == "hf-trainer-state" && std::filesystem::is_directory(path, ec)) {
    path /= "trainer_state.json";
  }
  if (!options.regex.empty() && options.format.empty()) format = "text";
  PARITY_RETURN_NOT_OK(refuse_non_regular(path));
  return format;
}

// Under a group: whether process 0 reads a parity run (then every process takes part in reading it).
// Process 0 decides, so that the processes never disagree on whether to meet in read_run_info.
bool group_reads_parity_run(const ProcessGroup& group, const Result<std::string>& format) {
  return group.broadcast(group.is_root() && format.ok() && *format == "parity-run" ? 1 : 0) != 0;
}

}  // namespace

Result<CurveRun> read_curves(const std::filesystem::path& input, const ReadOptions& options) {
  std::filesystem::path path = input;
  Result<std::string> chosen = choose_format(path, options);
  if (is_distributed(options.group) && !options.group->is_root()) {
    CurveRun share;  // process 0 returns the curves; this one only reads its share of a run's ranks
    if (group_reads_parity_run(*options.group, chosen))
      PARITY_RETURN_NOT_OK(detail::read_parity_run(path, options.group, share));
    return share;
  }
  const bool group_reads = is_distributed(options.group) && group_reads_parity_run(*options.group, chosen);
  PARITY_ASSIGN_OR_RETURN(std::string format, std::move(chosen));
  if (!options.run.empty() && format != "tensorboard")
    return Status::Invalid(fmt::format("{}: is a {} input; a run name (--run, --golden-run, --target-run) selects "
                                       "a run of a TensorBoard log directory", input.string(), format));
  CurveRun run;
  run.path = input.string();
  run.format = format;
  Status st;
  if (format == "parity-run") st = detail::read_parity_run(path, group_reads ? options.group : nullptr, run);
  else if (format == "tensorboard") st = detail::read_tensorboard(path, options.run, run);
  else if (format == "hf-trainer-state") st = detail::read_hf_trainer_state(path, run);
  else if (format == "csv") st = detail::read_csv(path, options, run);
  else if (format == "jsonl") st = detail::read_jsonl(path, options, run);
  else st = detail::read_text_log(path, options, run);
  if (!st.ok()) return st;
  if (run.series.empty()) {
    std::string why = run.problems.empty() ? "" : " (" + run.problems.front().message() + ")";
    return Status::Invalid(fmt::format("{}: no scalar curve found in this {} input{}", input.string(),
                                       format, why));
  }
  return run;
}

Result<std::pair<CurveRun, CurveRun>> read_curve_pair(const std::filesystem::path& golden,
                                                      const std::filesystem::path& target, const ReadOptions& options) {
  return read_curve_pair(golden, target, options, options);
}

Result<std::pair<CurveRun, CurveRun>> read_curve_pair(const std::filesystem::path& golden,
                                                      const std::filesystem::path& target,
                                                      const ReadOptions& golden_options,
                                                      const ReadOptions& target_options) {
  std::future<Result<CurveRun>> t;
  if (!is_distributed(target_options.group))
    t = std::async(std::launch::async, [&] { return read_curves(target, target_options); });
  Result<CurveRun> g = read_curves(golden, golden_options);
  Result<CurveRun> tr = t.valid() ? t.get() : read_curves(target, target_options);
  if (!g.ok()) return g.status();
  if (!tr.ok()) return tr.status();
  return std::pair{std::move(*g), std::move(*tr)};
}

}  // namespace parity::curves
