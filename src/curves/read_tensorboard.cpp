// src/curves/read_tensorboard.cpp — scalar summaries from TensorBoard event files, decoded by
// protobuf with parity's subset of TensorBoard's protos (proto/tb_event.proto).
#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include <fmt/format.h>

#include "curves/readers.h"
#include "parity/dtype.h"
#include "src/curves/proto/tb_event.pb.h"  // generated (CMakeLists.txt, protobuf_generate)

namespace parity::curves::detail {

namespace {

// The value of a 0-d (or one-element) summary tensor, as tf.summary.scalar writes it in TF2.
bool tensor_scalar(const tb::TensorProto& t, double& out) {
  switch (t.dtype()) {
    case tb::DT_FLOAT:
      if (t.float_val_size() > 0) { out = t.float_val(0); return true; }
      if (t.tensor_content().size() >= 4) { float f; std::memcpy(&f, t.tensor_content().data(), 4); out = f; return true; }
      return false;
    case tb::DT_DOUBLE:
      if (t.double_val_size() > 0) { out = t.double_val(0); return true; }
      if (t.tensor_content().size() >= 8) { std::memcpy(&out, t.tensor_content().data(), 8); return true; }
      return false;
    case tb::DT_HALF:
    case tb::DT_BFLOAT16: {
      DType d = t.dtype() == tb::DT_HALF ? DType::kF16 : DType::kBF16;
      if (t.half_val_size() > 0) { out = decode_bits(d, static_cast<uint16_t>(t.half_val(0))); return true; }
      if (t.tensor_content().size() >= 2) {
        uint16_t bits; std::memcpy(&bits, t.tensor_content().data(), 2); out = decode_bits(d, bits); return true;
      }
      return false;
    }
    case tb::DT_INT32:
      if (t.int_val_size() > 0) { out = t.int_val(0); return true; }
      return false;
    case tb::DT_INT64:
      if (t.int64_val_size() > 0) { out = static_cast<double>(t.int64_val(0)); return true; }
      return false;
    default:
      return false;
  }
}

Status read_event_file(const std::filesystem::path& file, SeriesBuilder& b, CurveRun& run) {
  PARITY_ASSIGN_OR_RETURN(TfRecordScan scan, scan_tfrecords(file));
  if (!scan.tail_problem.empty())
    run.problems.push_back(Status::Corrupt(fmt::format("{}: {}; {} complete record(s) before it were read",
                                                       file.string(), scan.tail_problem, scan.records.size())));
  tb::Event ev;
  size_t bad = 0;
  for (const std::string& rec : scan.records) {
    if (!ev.ParseFromString(rec)) { ++bad; continue; }
    if (!ev.has_summary()) continue;
    for (const auto& v : ev.summary().value()) {
      double value;
      if (v.has_simple_value()) value = v.simple_value();
      else if (v.has_tensor() && tensor_scalar(v.tensor(), value)) {}
      else continue;  // images, histograms, text: not curves
      b.add(v.tag(), -1, ev.step(), value);
    }
  }
  if (bad > 0)
    run.problems.push_back(Status::Corrupt(fmt::format(
        "{}: {} record(s) with valid checksums did not decode as Event protos", file.string(), bad)));
  return Status::OK();
}

// Every event file under `dir`, by run: TensorBoard's runs are the directories that hold event files,
// named by their path relative to the log directory ("." for the log directory itself).
std::map<std::string, std::vector<std::filesystem::path>> event_files_by_run(const std::filesystem::path& dir,
                                                                             CurveRun& run) {
  std::map<std::string, std::vector<std::filesystem::path>> runs;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string().find("tfevents") == std::string::npos) continue;
    std::error_code entry_ec;  // a symlink loop is no file: a problem, not an internal error
    if (it->is_regular_file(entry_ec)) {
      const std::string name = it->path().parent_path().lexically_relative(dir).generic_string();
      runs[name.empty() ? "." : name].push_back(it->path());
    } else if (entry_ec || !it->is_directory(entry_ec)) {
      run.problems.push_back(Status::IOError(fmt::format("{}: not a readable event file{}", it->path().string(),
                                                         entry_ec ? " (" + entry_ec.message() + ")" : "")));
    }
  }
  return runs;
}

// The runs for an error message: the first 12 by name and how many more (a sweep may have hundreds).
std::string run_list(const std::map<std::string, std::vector<std::filesystem::path>>& runs) {
  std::string s;
  size_t shown = 0;
  for (const auto& [name, files] : runs) {
    if (shown++ == 12) return s + fmt::format(", ... {} more", runs.size() - 12);
    s += fmt::format("{}{} ({} event file{})", s.empty() ? " " : ", ", name, files.size(), files.size() == 1 ? "" : "s");
  }
  return s;
}

// The event files of one run of the log directory `dir`: `run_name`'s, or the only run's. Several runs
// are never merged: their steps would interleave into one curve that no run wrote.
Result<std::vector<std::filesystem::path>> run_event_files(const std::filesystem::path& dir,
                                                           const std::string& run_name, CurveRun& run) {
  auto runs = event_files_by_run(dir, run);
  if (runs.empty())
    return Status::NotFound(fmt::format("{}: no TensorBoard event file (*tfevents*) inside", dir.string()));
  std::map<std::string, std::vector<std::filesystem::path>>::iterator chosen;
  if (!run_name.empty()) {
    chosen = runs.find(std::filesystem::path(run_name).lexically_normal().generic_string());
    if (chosen == runs.end())
      return Status::Invalid(fmt::format("{}: no TensorBoard run \"{}\"; its runs:{}", dir.string(), run_name,
                                         run_list(runs)));
  } else if (runs.size() > 1) {
    return Status::Invalid(fmt::format(
        "{}: a TensorBoard log directory with {} runs, which are never merged; give the run's folder, or name "
        "it with --run NAME (parity curve: both inputs; --golden-run / --target-run: one):{}", dir.string(), runs.size(), run_list(runs)));
  } else {
    chosen = runs.begin();
  }
  if (chosen->first != ".") run.path = (dir / chosen->first).string();
  // Event file names carry the creation time, so name order is write order (a resumed run's files).
  std::vector<std::filesystem::path> files = std::move(chosen->second);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

Status read_tensorboard(const std::filesystem::path& path, const std::string& run_name, CurveRun& run) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    PARITY_ASSIGN_OR_RETURN(files, run_event_files(path, run_name, run));
  } else {
    if (!run_name.empty())
      return Status::Invalid(fmt::format("{}: is one event file, not a log directory; it has no run \"{}\" to select",
                                         path.string(), run_name));
    files.push_back(path);
  }
  SeriesBuilder b;
  for (const auto& f : files) {
    Status st = read_event_file(f, b, run);
    if (!st.ok()) run.problems.push_back(st);
  }
  b.finish(run);
  return Status::OK();
}

}  // namespace parity::curves::detail
