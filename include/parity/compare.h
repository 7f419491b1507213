// parity/compare.h — pairing the records of two sources and judging each pair.
//
// run_compare() opens nothing itself: it takes two RecordSources, pairs their records (matching),
// computes metrics for each pair (the fused kernel for tensors, statistic differences for
// statistics-only records, equality for checksums), and judges each row against thresholds.
// Localisation and diagnosis (parity/analysis.h) work on the CompareResult afterwards.
// The JSON form (schema "parity.compare/1") is documented in docs/compare-json.md.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parity/boxed.h"
#include "parity/loss_scale.h"
#include "parity/metrics.h"
#include "parity/open_source.h"  // RankShares
#include "parity/process_group.h"
#include "parity/progress.h"
#include "parity/source.h"
#include "parity/thresholds.h"
#include "parity/verdict.h"  // Verdict, MatchKind, NoiseClass, CompareMode

namespace parity {

// Statistics-mode differences (msprobe's rule): per statistic, diff = target − golden and relative
// error |diff| / |golden| (NaN when golden is 0 and diff ≠ 0; 0 when both 0). Not held by a row:
// stats_differences() computes them from the statistics each side was compared by.
struct StatsDifferences {
  double max_diff = kNaN, min_diff = kNaN, mean_diff = kNaN, norm_diff = kNaN;
  double max_rel = kNaN, min_rel = kNaN, mean_rel = kNaN, norm_rel = kNaN;
  double worst_rel = kNaN;  // the largest of the four relative errors
};

// A row compared by statistics: the statistics of a side whose record stores none, computed from its
// tensor data. A side with stored statistics is read from its record (golden_stats / target_stats),
// and the differences are computed when read (a million rows held both sides' statistics, then their
// differences: 0.16, then 0.09 KB a row).
struct StatsComparison {
  Boxed<TensorStats> golden_computed, target_computed;
};

// A parameter compared at step s and at an earlier captured step s0 on both sides: how the two runs'
// changes of it between s0 and s (optimizer updates) differ (metrics.h compare_updates), and its
// gradient's relative error at s0 when that was compared. `differs` is the judgement
// (parameter_update_differs, parity/noise.h; docs/judgement.md "Parameters across steps").
struct ParameterUpdate {
  int64_t from_step = -1;
  double rel_error = kNaN;       // ‖Δu‖ / ‖u_golden‖
  double golden_norm = kNaN;     // ‖u_golden‖
  double grad_rel_error = kNaN;  // rel L2 of the parameter's gradient at from_step; NaN when not compared
  // UpdateMetrics' counts: elements the golden moved, of those the target left in place, and of those the
  // ones whose golden step rounds to nothing in the target's dtype (metrics.h compare_updates).
  int64_t moved = 0, stalled = 0, lost = 0;
  bool differs = false;
};

// A row's part in a discrete decision that flipped under low precision (docs/judgement.md "Decision flips").
enum class FlipRole : uint8_t {
  kNone,
  kDecision,  // the decision's own output (top-k indices, an argmax, a mask) differs; its inputs by rounding only
  kAffected,  // a row of the block the decision steers, judged given the flip
  kMask,      // a ReLU's input gradient g·[x > 0] whose mask flipped where x lies within rounding of 0:
              // judged outside the flipped positions (docs/judgement.md "ReLU masks")
};

// "none" | "decision" | "affected" | "mask": the spelling in every output.
const char* flip_role_name(FlipRole r);

struct CompareRow {
  // Each side's record (name, file, dtype, shape, module, step, ...) where its source listed it: a row
  // holds no copy of either (at a million rows, copies were a third of the memory), so the sources
  // must outlive the result — compare_runs' callers hold them while they render.
  const Record* golden = nullptr;
  const Record* target = nullptr;
  double match_confidence = 1.0;  // < 1 only for order-aligned pairs (matching/mapping.h PairMatch)

  // The one-byte fields sit together (a comparison may hold a million rows; 240 bytes a row before).
  MatchKind match = MatchKind::kExact;
  CompareMode mode = CompareMode::kNone;
  bool shape_differs = false;             // same element count, different shape: compared flat, flagged
  // The difference lies along the golden far beyond what rounding puts there (parity/noise.h ErrorShape,
  // set by classify_rows): a scale or offset error, structural whatever its size.
  bool error_structured = false;
  // A backward result cancelled to below 2^-10 of the scale it was computed from, measured against that scale
  // (classify_rows; docs/judgement.md "Cancellation").
  bool cancelled = false;
  // ‖terms‖ / ‖g‖ of a gradient that is a sum over a broadcast dimension and cancelled: it was measured against
  // its terms' scale (classify_rows; docs/judgement.md "Sums that cancel"); 0 where not.
  float sum_cancellation = 0.0f;
  FlipRole flip = FlipRole::kNone;  // a discrete decision that flipped, or a row it steers (classify_rows)
  int32_t mask_flips = 0;           // flip kMask: the positions whose ReLU mask flipped
  // k of a recognised loss scale (parity/loss_scale.h): the target was compared as stored × 2^-k, and its
  // statistics in `metrics` / `stats` are those of the compared values; 0 = compared as stored.
  int8_t loss_scale_log2 = 0;
  std::optional<bool> checksum_equal;     // mode == kChecksum
  // The fixed-threshold judgement (compare/judge.h) and the final verdict under the policy in effect
  // (parity/verdict_policy.h is their only writer after measurement), with their reasons below.
  Verdict fixed_verdict = Verdict::kError;
  Verdict verdict = Verdict::kError;
  NoiseClass noise = NoiseClass::kUnknown;

  InternedString layout_note;  // how a differing layout was compared when not flat ("target stored transposed ...")
  Boxed<PairMetrics> metrics;             // mode == kTensor
  Boxed<StatsComparison> stats;           // mode == kStatistics
  Boxed<ParameterUpdate> update;          // parameters at a later step, tensor data on both sides

  std::string reason;          // why this verdict ("beyond rounding (410 u); fixed thresholds pass: ...")
  // The fixed-threshold judgement's reason: every final reason quotes it whole (parity/verdict_policy.h),
  // so a row keeps it as this span of `reason` rather than as a second string (80 bytes a row).
  uint32_t fixed_reason_at = 0, fixed_reason_size = 0;
  std::string_view fixed_reason() const {
    return fixed_reason_at <= reason.size() ? std::string_view(reason).substr(fixed_reason_at, fixed_reason_size)
                                            : std::string_view();
  }
  double noise_ratio = kNaN;   // observed relative error / expected rounding noise (docs/judgement.md)
};

// The rows of a comparison, one a matched pair: a million at 1,000 ranks × 1,000 events, so they live in
// a spill file (parity/spill.h), not in the process's anonymous memory.
using RowList = SpillVector<CompareRow>;

// Where a row stands in execution order: its golden record's (rank, step, order) — the one definition
// the analyses and the table sort by.
struct ExecutionPosition {
  int rank = -1;
  int64_t step = -1, order = -1;
  friend auto operator<=>(const ExecutionPosition&, const ExecutionPosition&) = default;
};
ExecutionPosition execution_position(const CompareRow& row);
// Row indices in execution order, ties by row index. Each row is read once and its position sorted on
// its own: a comparator reading the rows touched every row ~20 times at random, and rows and records
// live in a spill file (parity/spill.h) whose pages, under memory pressure, come back from disk.
std::vector<size_t> rows_in_execution_order(const RowList& rows);

// The statistics a row with `stats` compared on each side: the one computed from the side's tensor
// data, else its record's stored statistics.
const TensorStats& golden_stats(const CompareRow& row);
const TensorStats& target_stats(const CompareRow& row);
// The differences of a row with `stats`: compare_stats(golden_stats(row), target_stats(row)).
StatsDifferences stats_differences(const CompareRow& row);
// Statistics of x × 2^log2 from those of x: min, max, mean, l2norm and absmax scaled (exact in fp64 but
// where it under/overflows), the counts kept. A loss-scaled row's target is compared as
// scale_stats(stored, -k); the overflow and underflow judgements read scale_stats(compared, +k), the
// values as stored (a gradient overflows or underflows as the target held it).
TensorStats scale_stats(TensorStats stats, int log2);

// Observed relative error of a compared row, for the rounding-noise model (parity/noise.h): rel_l2 for
// tensors (structural +inf when non-finite values disagree); for statistics a proven *lower bound* of
// rel_l2, max(|Δnorm|, |Δmax|, |Δmin|, √n·|Δmean|) / ‖golden‖ (docs/judgement.md "Statistics mode");
// 0 for equal checksums. NaN when the row has nothing to measure.
double row_observed_error(const CompareRow& row);

struct CompareOptions {
  Thresholds thresholds = default_thresholds();  // the shipped values unless overridden
  int64_t step = -1;           // only records of this step (-1 = all)
  int rank = -1;               // only records of this rank (-1 = all)
  std::string direction;       // only records of this direction ("forward" | "backward"; "" = all)
  std::vector<std::string> include, exclude;  // name regexes: keep matching / drop matching records
  int jobs = 0;                // worker threads (0 = all cores)
  std::vector<std::string> kl_patterns;  // regexes: names whose rows also get softmax KL
  std::string map_file;        // target→golden name mapping rules (--map), "" = none
  bool align = true;           // order-based alignment of names left unmatched
  ProgressSink* progress = nullptr;  // reports bytes compared (nullptr = silent)
  // Several processes (mpirun): each measures its byte-balanced, contiguous share of the rows (so maps
  // only its files) and process 0 receives every measured row. nullptr = this process alone.
  const ProcessGroup* group = nullptr;
  // With a group, and captures divided by rank: the sources of process p > 0 hold only the ranks
  // rank_shares->ranks[p] (open_source_ranks), so each lists, pairs and measures only those; process 0's
  // sources hold everything, it measures its own ranks' rows and receives the others' by row identity.
  const RankShares* rank_shares = nullptr;
};

struct CompareSummary {
  int64_t rows = 0, pass = 0, warn = 0, fail = 0, error = 0;
  int64_t unmatched_golden = 0, unmatched_target = 0, problems = 0;
  // Of the unmatched records, ops inside a module compared on both sides (implementation details).
  int64_t unmatched_implementation = 0;
  // The worst row; any other unmatched record makes it at least kFail, an unreadable file kError.
  Verdict verdict = Verdict::kPass;
};

struct CompareResult {
  std::string golden_source, target_source;  // RecordSource::describe()
  RowList rows;              // in golden execution/listing order
  RecordList unmatched_golden, unmatched_target;
  std::vector<Status> problems;              // unreadable files/records on either side, with names
  int64_t golden_problems = 0;               // problems[0, golden_problems) are the golden side's
  std::vector<std::string> notes;            // what could not be compared and why (mode mismatches, ...)
  int64_t filtered = 0;                      // records of both sides left out by the filters
  // Rows a name filter (--include/--exclude/--direction) hides but whose measurement the verdicts of the
  // rows it shows depend on (decision_context): measured, classified with `rows` (classify_rows), never
  // shown, counted or analysed. Empty without a name filter.
  RowList context;
  // Set by classify_rows: the rows carry their noise classes. Rows are classified once — the compare
  // pipeline does it before the verdict policy reads the classes; the analysis and the diagnoses classify
  // only a result nobody classified (a library caller's).
  bool classified = false;
  CompareSummary summary;
  Thresholds thresholds;                     // in effect
  VerdictPolicy policy = VerdictPolicy::kFixedThresholds;  // run_compare's verdicts are the fixed ones
  std::optional<std::string> golden_fingerprint, target_fingerprint;  // environment JSON, when known
  // Peak resident memory of each process that took part (parity/resources.h), by process number; one
  // entry when alone. The other processes' are taken when they send their rows, process 0's when its
  // report is complete (compare_runs).
  std::vector<int64_t> peak_resident_bytes;
  // Under rank shares: rows of another process's ranks that no process sent (their pairing crossed
  // ranks), which process 0 then measured itself. 0 when the division worked as planned.
  int64_t rows_measured_for_others = 0;
  // The (rank, step)s whose backward rows were compared after unscaling (parity/loss_scale.h).
  std::vector<LossScale> loss_scales;
};

// Decision blocks (docs/judgement.md "Decision flips"). A decision is an integer or boolean output computed
// from float inputs (a router's top-k, argmax, a comparison mask); the block it steers is the parent of the
// module it ran in ("model.layers.0.mlp.gate" → "model.layers.0.mlp").
std::string steered_block(const Record& decision);
// `module` is `block` or inside it.
bool in_module(std::string_view module, std::string_view block);
// Of the pairs whose golden records are `golden` and for which hidden[i] is true (a name filter hides them),
// those the verdicts of the shown rows depend on: every pair of the (rank, step) and block a decision
// steers, the decision and its inputs included, where the decision is among the pairs (shown or hidden);
// and the parameters of a run with several steps (the state a step carries into the next). Metadata only:
// every process of a group finds the same pairs.
std::vector<bool> decision_context(const std::vector<const Record*>& golden, const std::vector<bool>& hidden);

// Counts and overall verdict of a result's rows, unmatched records and problems. run_compare fills
// `summary` with it; a later pass that changes row verdicts calls it again.
CompareSummary summarize_compare(const CompareResult& result);
// Applies decide_row_verdict (parity/verdict_policy.h) to every row of a classified result (classify_rows
// first) and recounts the summary: the only writer of CompareRow::verdict after measurement. An
// order-aligned pair below kStrongPairingConfidence cannot fail on its own (it warns).
void apply_verdict_policy(CompareResult& result, VerdictPolicy policy);

// Unmatched records of one side that are ops inside a module compared on both sides.
int64_t count_implementation_records(const CompareResult& result, bool golden_side);

// Pairs, measures and judges. Fails only when the options are unusable (a bad --kl pattern) or, with a
// group of several processes, when the measured rows cannot be gathered; every problem with the data
// itself becomes a row verdict, an unmatched record or a problem in the result. With a group, only
// process 0's result is complete: the other processes' rows hold their own share's measurements only.
Result<CompareResult> run_compare(const RecordSource& golden, const RecordSource& target,
                                  const CompareOptions& options);

}  // namespace parity
