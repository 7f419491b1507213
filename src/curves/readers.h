// src/curves/readers.h — internal: one function per curve input format, and the accumulator they
// share. read_curves() (read.cpp) detects the format and calls one of these.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "parity/curves.h"

namespace parity::curves::detail {

// Collects (metric, rank, step, value) points in any order and turns them into sorted Series.
// A repeated (metric, rank, step) keeps the last value added (resumed runs re-log steps; TensorBoard
// shows the last write) and is counted in a note.
class SeriesBuilder {
 public:
  void add(const std::string& raw_metric, int rank, int64_t step, double value);
  // Moves the series into run.series (sorted by metric, rank) and appends notes.
  void finish(CurveRun& run);
  size_t points() const { return points_; }

 private:
  std::map<std::tuple<std::string, int>, std::map<int64_t, double>> data_;
  std::map<std::string, int64_t> repeated_;  // metric → repeated steps
  size_t points_ = 0;
};

// Parse a number as written in logs and tables: decimal/scientific, "nan", "inf", "-inf", "Infinity",
// "NaN" (any case). Returns false when `text` (trimmed) is not a number.
bool parse_number(std::string_view text, double& out);
std::string_view trim(std::string_view s);
// A step or rank read as a double (CSV cell, JSON float, regex group): true with the integer when `v`
// is finite and within int64_t (steps) or int (ranks). Casting 1e300 to an integer is undefined.
bool step_from_double(double v, int64_t& out);
bool rank_from_double(double v, int& out);
// Decimal digits of a step or rank as logs print them: false when out of range (no exception).
bool parse_step(std::string_view digits, int64_t& out);
bool parse_rank(std::string_view digits, int& out);

Status read_csv(const std::filesystem::path& path, const ReadOptions& options, CurveRun& run);
Status read_jsonl(const std::filesystem::path& path, const ReadOptions& options, CurveRun& run);
Status read_hf_trainer_state(const std::filesystem::path& path, CurveRun& run);
Status read_text_log(const std::filesystem::path& path, const ReadOptions& options, CurveRun& run);
// `run_name`: ReadOptions::run.
Status read_tensorboard(const std::filesystem::path& path, const std::string& run_name, CurveRun& run);
Status read_parity_run(const std::filesystem::path& path, const ProcessGroup* group, CurveRun& run);

// TFRecord framing (tfrecord.cpp): every complete record's payload; stops at the first torn or
// corrupt record and describes it in `tail_problem`.
struct TfRecordScan {
  std::vector<std::string> records;
  std::string tail_problem;
};
Result<TfRecordScan> scan_tfrecords(const std::filesystem::path& file);
// masked_crc32c as TensorFlow defines it (for writers in tests).
uint32_t tfrecord_masked_crc(const void* data, size_t n);
std::string tfrecord_frame(const std::string& payload);

}  // namespace parity::curves::detail
