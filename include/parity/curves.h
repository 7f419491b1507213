// parity/curves.h — the trajectory layer: scalar curves (loss, grad norm, learning rate, loss scale,
// throughput, anything logged per step) read from training logs, compared golden vs target, and
// compared rank against rank within one run.
//
// Readers (docs/curves.md "Inputs"): parity runs (the scalars log written by `cap.log`), CSV/TSV and
// JSON-lines with a step column, TensorBoard event files (TFRecord framing with masked CRC32C, Event
// protos decoded by protobuf), HuggingFace trainer_state.json (`log_history`), and text logs through a
// regex with Megatron-LM and DeepSpeed presets. Analysis definitions (relative deviation, divergence
// step, spikes, verdict) are in docs/curves.md with their justification; JSON schemas "parity.curve/1"
// and "parity.ranks/1" likewise.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parity/metrics.h"  // kNaN
#include "parity/process_group.h"
#include "parity/status.h"
#include "parity/verdict.h"

namespace parity::curves {

// ---- data -----------------------------------------------------------------------------------------

// One scalar series: values of one metric by step, for one rank (-1 = not per rank).
// After reading, steps are strictly increasing (a repeated step keeps the last value logged, the way
// TensorBoard and resumed training logs behave; the repetition is noted in CurveRun::notes).
struct Series {
  std::string metric;            // canonical name (canonical_metric) — "loss", "grad_norm", ...
  int rank = -1;
  std::vector<int64_t> steps;
  std::vector<double> values;    // as logged: NaN / ±Inf are kept
};

struct CurveRun {
  std::string path;              // what was read
  std::string format;            // parity-run | csv | jsonl | tensorboard | hf-trainer-state | text
  std::vector<Series> series;    // sorted by (metric, rank)
  std::vector<std::string> notes;     // harmless oddities: repeated steps, skipped non-numeric cells
  std::vector<Status> problems;       // parts that could not be read (torn record, bad line); the rest was
  // The series of `metric` for `rank`; for rank -1: the rank-less series, else the lowest rank's.
  const Series* find(std::string_view metric, int rank = -1) const;
  std::vector<std::string> metrics() const;  // distinct metric names, sorted
  std::vector<int> ranks() const;            // distinct ranks >= 0, sorted
};

struct ReadOptions {
  std::string format;            // "" = detect (docs/curves.md "Detection")
  std::string step_key;          // CSV/JSONL column holding the step; "" = first of step, global_step,
                                 // iteration, iter, _step, Step (else the row number)
  std::string preset;            // text logs: "megatron" | "deepspeed" | "" = try both
  std::string regex;             // text logs: a custom ECMAScript regex, one match per line...
  std::vector<std::string> regex_fields;  // ...whose capture groups are named here in order; one must be "step"
  // TensorBoard log directories: the run to read, i.e. the directory holding its event files, relative to
  // the given one ("." = event files directly in it). "" = the only run there is; a directory with
  // several runs is then an error naming them (docs/curves.md "TensorBoard runs"). Set for an input of
  // another kind, an error.
  std::string run;
  // Under a group of several processes (mpirun) every process calls read_curves: a parity run is then
  // read by all of them, each its share of the ranks (read_run_info), and process 0 returns the whole
  // run's curves, the others an empty run; any other input is read by process 0 alone. nullptr = alone.
  const ProcessGroup* group = nullptr;
};

// Names of the readable formats, for --format.
const std::vector<std::string>& curve_formats();
// Read a file or directory into curves. Errors (exit code 2) only when nothing usable could be read;
// partial damage goes to problems().
Result<CurveRun> read_curves(const std::filesystem::path& path, const ReadOptions& options = {});
// Both runs of a comparison: read side by side on two threads (alone; one after the other under a group of
// processes, whose collective reads must not interleave). The golden's error is reported first.
Result<std::pair<CurveRun, CurveRun>> read_curve_pair(const std::filesystem::path& golden,
                                                      const std::filesystem::path& target,
                                                      const ReadOptions& options = {});
// The same with options of each side (they differ in `run` alone when a TensorBoard log directory holds
// both runs: --golden-run / --target-run).
Result<std::pair<CurveRun, CurveRun>> read_curve_pair(const std::filesystem::path& golden,
                                                      const std::filesystem::path& target,
                                                      const ReadOptions& golden_options,
                                                      const ReadOptions& target_options);
// The canonical spelling of a logged metric name: "lm loss", "train/loss", "train_loss" → "loss";
// "grad norm", "grad_norm", "gradient_norm" → "grad_norm"; "learning rate", "learning_rate",
// "lr" → "lr"; "loss scale", "loss_scale", "scaler" → "loss_scale"; throughput spellings →
// "throughput". Other names are lower-cased with spaces turned into '_' (docs/curves.md "Names").
std::string canonical_metric(std::string_view raw);
// Timing / throughput / memory counters ("iter_time_ms", "tokens_per_sec", "tflops", ...): they differ
// between hardware by design, so they are compared only when named with --metric.
bool is_performance_metric(std::string_view metric);
// Counters: how far training has got, not how well it goes — consumed samples/tokens, batch size,
// step/epoch/iteration numbers. By name, or by shape: a series that is exactly affine in the step
// (value = a·step + b, a ≠ 0: epoch = step/steps_per_epoch, consumed samples = step·batch) and is not
// a training quantity (loss, norm, lr, scale, accuracy). Compared only when asked (docs/curves.md).
bool is_counter_metric(const Series& series);

// ---- golden vs target -----------------------------------------------------------------------------

// Tolerances for one metric (defaults per metric in default_tolerance; justified in docs/curves.md).
struct Tolerance {
  double rel_tol = 0.02;     // relative deviation above this at a step counts towards divergence
  int consecutive = 5;       // ...for this many consecutive aligned steps = divergence
  double final_tol = 0.01;   // |final_t − final_g| / |final_g| must stay within this to pass
};
Tolerance default_tolerance(std::string_view metric);

struct CurveOptions {
  std::vector<std::string> metrics;            // "" = every metric both runs have
  std::map<std::string, Tolerance> tolerances; // per metric overrides of default_tolerance
  int rank = -1;             // which rank's series to compare (-1 = rank-less, else lowest rank)
  int windows = 10;          // per-window statistics: the aligned steps cut into this many windows
  int spike_window = 21;     // rolling-median window (trailing, in points) for spike detection
  double spike_k = 6.0;      // spike: value > median + k · 1.4826 · MAD
  int final_window = 0;      // points averaged for the final value (0 = auto: clamp(n/20, 1, 10))
  double rel_floor = 1e-12;  // absolute floor of every relative-deviation denominator
  // Denominator floor relative to the golden series' scale (RMS of its finite values): a golden value
  // crossing zero is compared against this much of the series' typical size, not divided by ~0.
  double rel_scale_floor = 1e-3;
  bool counters = false;     // compare counters (is_counter_metric) too; naming one with `metrics` does
  double steady_fraction = 0.8;  // steady divergence: at least this share of the steps from the
                                 // divergence step on are above tolerance
};

struct AlignedPoint {
  int64_t step = 0;
  double golden = 0, target = 0;
  double abs_diff = 0;       // t − g (signed)
  double rel_dev = 0;        // |t − g| / max(|g|, rel_floor); 0 when both equal (including both NaN)
};

struct Window {
  int64_t first_step = 0, last_step = 0;
  int64_t points = 0;
  double mean_rel_dev = 0, max_rel_dev = 0;
};

struct Spike {
  int64_t step = 0;
  double value = 0, median = 0, threshold = 0;
};

struct MetricComparison {
  std::string metric;
  Tolerance tolerance;
  Verdict verdict = Verdict::kPass;
  std::vector<std::string> reasons;      // why the verdict (one line each)

  std::vector<AlignedPoint> points;      // steps present on both sides
  std::vector<int64_t> missing_in_golden, missing_in_target;
  // Over aligned points where both values are finite:
  double mean_rel_dev = kNaN, max_rel_dev = kNaN;
  int64_t max_rel_dev_step = -1;
  double mean_abs_diff = kNaN, max_abs_diff = kNaN;  // of |t − g|
  std::vector<Window> windows;
  std::optional<int64_t> divergence_step;
  // What the above-tolerance steps look like (docs/curves.md "Steady divergence or spikes"):
  // "none"; "steady" (diverged and stays apart: ≥ steady_fraction of the steps from the divergence step
  // on are above tolerance); "transient" (diverged, then came back); "spikes" (isolated steps above
  // tolerance, never `consecutive` in a row).
  std::string deviation_kind = "none";
  int64_t steps_above_tol = 0;
  double fraction_above_after_divergence = kNaN;
  std::vector<int64_t> spike_steps_above_tol;  // "spikes": the isolated steps above tolerance
  std::vector<int64_t> nonfinite_golden, nonfinite_target;  // steps holding NaN/Inf
  std::vector<Spike> spikes_golden, spikes_target;
  // Final value: mean of the last final_window finite aligned points of each side.
  int final_window = 1;
  double final_golden = kNaN, final_target = kNaN, final_abs_diff = kNaN, final_rel_diff = kNaN;
  // Best value: the minimum (loss-like metrics) or maximum (accuracy / throughput) over finite points.
  std::string best_mode;                 // "min" | "max"
  double best_golden = kNaN, best_target = kNaN, best_abs_diff = kNaN, best_rel_diff = kNaN;
  int64_t best_golden_step = -1, best_target_step = -1;
  // ∫|t − g| d(step) and ∫|g| d(step) by the trapezoid rule over aligned finite points.
  double area_between = kNaN, area_golden = kNaN, rel_area = kNaN;
  // Least-squares slope of value against step, each side (trend direction).
  double slope_golden = kNaN, slope_target = kNaN;
  bool trend_consistent = true;
};

struct CurveComparison {
  std::string golden_path, golden_format, target_path, target_format;
  std::vector<MetricComparison> metrics;
  std::vector<std::string> only_golden, only_target;  // metrics present on one side only
  std::vector<std::string> counters_skipped;          // shared counters left out (CurveOptions::counters)
  std::vector<Status> problems;                       // both runs' reading problems
  std::vector<std::string> notes;                     // both runs' reading notes (CurveRun::notes), path first
  Verdict verdict = Verdict::kPass;                   // worst metric; problems make it at least kWarn
};

Result<CurveComparison> compare_curves(const CurveRun& golden, const CurveRun& target,
                                       const CurveOptions& options = {});
// One metric's comparison (the building block, exposed for tests and the Python binding).
MetricComparison compare_series(const Series& golden, const Series& target, const Tolerance& tol,
                                const CurveOptions& options);

// Spike detection on one series: points whose value exceeds the trailing rolling median of the
// previous `window` finite points by more than k · 1.4826 · MAD (docs/curves.md "Spikes").
std::vector<Spike> find_spikes(const std::vector<int64_t>& steps, const std::vector<double>& values,
                               int window, double k);

// ---- ranks within one run -------------------------------------------------------------------------

struct RankOptions {
  std::vector<std::string> metrics;  // "" = every metric logged by at least two ranks
  double rel_tol = 1e-5;     // |v_r − median| / max(|median|, floor) above this is a disagreement
  int consecutive = 1;       // disagreements on this many consecutive steps name the rank
  double rel_floor = 1e-12;
};

struct RankDeviation {
  int rank = -1;
  int64_t from_step = -1;    // first step of the first run of `consecutive` disagreements
  int64_t steps = 0;         // number of disagreeing steps
  double max_rel_dev = 0;
  int64_t max_rel_dev_step = -1;
};

struct RankMetricResult {
  std::string metric;
  std::vector<int> ranks;
  int64_t steps_compared = 0;          // steps logged by at least two ranks
  std::vector<RankDeviation> inconsistent;
  std::map<int, std::vector<int64_t>> missing_steps;  // rank → steps other ranks logged but it did not
  Verdict verdict = Verdict::kPass;
};

struct RankComparison {
  std::string path, format;
  double rel_tol = 0;        // in effect
  int consecutive = 1;
  std::vector<RankMetricResult> metrics;
  std::vector<Status> problems;
  std::vector<std::string> notes;      // the run's reading notes (CurveRun::notes)
  Verdict verdict = Verdict::kPass;
  bool rank_inconsistent = false;      // the diagnosis code RANK_INCONSISTENT applies
};

Result<RankComparison> compare_ranks(const CurveRun& run, const RankOptions& options = {});

// ---- outputs (docs/curves.md) -------------------------------------------------------------------------
std::string curve_comparison_json(const CurveComparison& c, int indent = 2);   // schemas::kCurve
std::string curve_comparison_csv(const CurveComparison& c);                    // schemas::kCurveCsv
std::string rank_comparison_json(const RankComparison& c, int indent = 2);     // schemas::kRanks
std::string rank_comparison_csv(const RankComparison& c);                      // schemas::kRanksCsv

// Terminal summaries (at most `width` columns, ≤ 100): per metric a verdict line, Unicode sparklines
// of both curves on one shared scale and of the relative deviation, then the reasons. `colorize`
// wraps verdict words (the CLI passes its colour policy); nullptr = plain.
using VerdictColorizer = std::string (*)(const std::string& text, Verdict v, bool color);
std::string curve_comparison_text(const CurveComparison& c, int width, bool color, VerdictColorizer colorize,
                                  bool verbose = false);
std::string rank_comparison_text(const RankComparison& c, int width, bool color, VerdictColorizer colorize);
// A sparkline of `values` resampled to `columns` cells with the block characters ▁▂▃▄▅▆▇█ on the
// scale [lo, hi]; NaN/Inf cells are '×', empty input ''.
std::string sparkline(const std::vector<double>& values, int columns, double lo, double hi);

}  // namespace parity::curves
