// src/curves/read_tensorboard.cpp — scalar summaries from TensorBoard event files, decoded by
// protobuf with parity's subset of TensorBoard's protos (proto/tb_event.proto).
#include <algorithm>
#include <cstring>

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

}  // namespace

Status read_tensorboard(const std::filesystem::path& path, CurveRun& run) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->path().filename().string().find("tfevents") != std::string::npos) {
        std::error_code entry_ec;  // a symlink loop is no file: a problem, not an internal error
        if (it->is_regular_file(entry_ec)) files.push_back(it->path());
        else if (entry_ec || !it->is_directory(entry_ec))
          run.problems.push_back(Status::IOError(fmt::format("{}: not a readable event file{}", it->path().string(),
                                                             entry_ec ? " (" + entry_ec.message() + ")" : "")));
      }
    // Event file names carry the creation time, so name order is write order.
    std::sort(files.begin(), files.end());
    if (files.empty())
      return Status::NotFound(fmt::format("{}: no TensorBoard event file (*tfevents*) inside", path.string()));
  } else {
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
