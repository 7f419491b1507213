// parity/analysis.h — where a compared run departs, and which op creates the error.
//
// Works on a CompareResult after run_compare (and, for the NaN/Inf origin, on a single run):
//  - classify_rows: the rounding-noise class of every row (parity/noise.h, docs/judgement.md);
//  - first divergence: the first failing row in execution order (forward before backward, per step and
//    rank);
//  - local error: for every module/op event, the error of its outputs against the error of its inputs
//    and parameters. An event that turns noise-level inputs into larger output error is a *source*; one
//    whose output error follows its inputs is a *carrier*. Suspects are ranked by error created;
//  - NaN/Inf origin, near-overflow and gradient underflow statistics (parity overflow).
// Formulas and thresholds: docs/judgement.md. JSON forms: docs/compare-json.md, docs/diagnosis.md.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parity/compare.h"
#include "parity/noise.h"
#include "parity/record_site.h"
#include "parity/source.h"

namespace parity {

// ---- events ------------------------------------------------------------------------------------------
// An event is one call of a module or an op: all records that share a name stem (the record name without
// its ".<role>.<index>" suffix), step and rank.
// The stem is a view into the record's name, which is interned (parity/interned_string.h): a key
// allocates nothing and stays valid for the life of the process.
struct EventKey {
  std::string_view name;
  int64_t step = -1;
  int rank = -1;
  bool operator==(const EventKey&) const = default;
};
struct EventKeyHash {
  size_t operator()(const EventKey& k) const noexcept;
};
EventKey event_key(const Record& r);

// A record's event name (event_stem, event_name, event_stem_of_name) and its place in the model
// (EventSite, event_site): parity/record_site.h.

// The reduction length n of the rounding expectation (parity/noise.h) for an output of op `op`: 1 when the
// op is elementwise (one rounding per element), else the last dimension of the event's first floating input
// (by index; nullptr when it has none), or without one of the output itself. Any op not listed as
// elementwise reduces: the larger allowance. classify_rows and parity.replay both use it (docs/judgement.md
// "Noise unit").
int64_t op_reduction_length(const std::string& op, const Shape* first_float_input, const Shape& output);

// Is `op` (a module class or an op name) numerically sensitive to low precision: normalisations,
// softmax / log-softmax, exp / log, reductions (seed 004 §3.1)?
bool is_sensitive_op(const std::string& op_or_module);
// Is it a random op (dropout, bernoulli, rand*, multinomial)?
bool is_random_op(const std::string& op_or_module);

// ---- noise classification --------------------------------------------------------------------------------
struct AnalysisOptions {
  NoiseParams noise;
  // An event is a source when its output noise ratio exceeds the noise class and is at least this many
  // times its worst input ratio (inputs below one expected rounding count as 1).
  double source_amplification = 8.0;
  // A module event whose error is also created by an event it contains (a child) with at least this
  // fraction of its log2 error creation is explained by that child and ranked after it.
  double child_explains = 0.5;
  size_t max_suspects = 10;
};

// Fill CompareRow::noise, noise_ratio and error_structured for every row (docs/judgement.md "Noise unit"):
// the unit roundoff is the larger of the row's own dtypes and, for capture dumps, of the dtypes its own
// event computed in (either side), the precision each run declares in its fingerprint (parameters,
// autocast, matmul precision) and the difference carried from earlier steps; the reduction length is
// the last dimension of the event's first floating input for reducing ops (matmul/linear, norms,
// softmax, reductions, attention, and module events), else 1.
// With the two sources, every record of an event counts for its dtypes, also those a filter left out, and
// a run without a fingerprint is judged at the coarsest dtype of its listing: the verdict of a row does not
// depend on the filters (docs/judgement.md "Which dtype, which n").
// Sets result.classified.
void classify_rows(CompareResult& result, const AnalysisOptions& options = {}, const RecordSource* golden = nullptr,
                   const RecordSource* target = nullptr);
// classify_rows unless result.classified: what the analysis and the diagnoses call, so a result the
// pipeline classified is never classified again.
void ensure_classified(CompareResult& result, const AnalysisOptions& options = {}, const RecordSource* golden = nullptr,
                       const RecordSource* target = nullptr);

// ---- first divergence -------------------------------------------------------------------------------------
struct FirstDivergence {
  size_t row = 0;           // index into CompareResult::rows
  std::string name, event, module, op, direction, role;
  int64_t step = -1;
  int rank = -1;
  Verdict verdict = Verdict::kFail;
  std::string reason;
  NoiseClass noise = NoiseClass::kUnknown;
  double noise_ratio = kNaN;
};

// The first row (by rank, step, direction (forward first), execution order) whose verdict is fail or
// error, or nullopt when none fails. Needs classify_rows first for the noise fields.
std::optional<FirstDivergence> first_divergence(const CompareResult& result);

// ---- local error: sources and carriers ----------------------------------------------------------------
enum class EventRole : uint8_t { kClean, kCarrier, kSource };
const char* event_role_name(EventRole r);  // "clean" | "carrier" | "source"

// One event (a module call or op of one rank and step: event_key's name, step and rank) and its error.
struct EventError {
  InternedString name, module, op, direction;  // interned: a thousand-rank run repeats them in every rank
  int64_t step = -1;
  int64_t first_order = -1, last_order = -1;  // execution-order span of the event's records
  std::vector<size_t> rows;  // indices into CompareResult::rows
  // Worst noise ratio over the event's rows of each role (NaN when the event has no row of that role).
  double input_ratio = kNaN, param_ratio = kNaN, output_ratio = kNaN;
  // Output error that the first input's error explains after propagation through the op (first order,
  // from the tensors; src/analysis/conditioning.h), in units of the output's expected rounding. NaN
  // when not modelled: input_ratio is then used as it is.
  double explained_ratio = kNaN;
  // output_ratio / max(explained_ratio (else input_ratio), param_ratio, 1): how much error the event adds (inf when non-finite values are
  // born here; NaN when the output cannot be measured).
  double amplification = kNaN;
  InternedString explained_by;   // a contained event that creates the same error ("" = none)
  size_t worst_output_row = SIZE_MAX;
  // The small fields together (a million events: 152 bytes an event, 160 with them apart).
  int rank = -1;
  EventRole role = EventRole::kClean;
  bool input_inferred = false;   // no input recorded: the previous event's output was used
  bool statistics_only = false;  // measured on statistics, not tensors: weaker evidence
  bool aligned_only = false;     // every measured output row was paired by order alignment: weaker evidence
  bool nonfinite_born = false;   // the target's outputs hold NaN/Inf that its inputs and the golden do not
};

// kStructure: an op present in one run only, inside a module call that creates error after it
// (docs/judgement.md "Ops present in one run only"); diagnosed as STRUCTURE_DIFF.
enum class SuspectKind : uint8_t { kInputs, kParameters, kSource, kStructure };
const char* suspect_kind_name(SuspectKind k);  // "inputs" | "parameters" | "source" | "structure"

struct Suspect {
  SuspectKind kind = SuspectKind::kSource;
  size_t event = 0;           // index into Analysis::events
  std::string name, module, op, direction;
  int64_t step = -1;
  int rank = -1;
  // Error created, in log2 units of the noise ratio: log2(amplification) for sources,
  // log2(ratio) for differing inputs or parameters. +inf when NaN/Inf are born here.
  double score = 0;
  double input_ratio = kNaN, param_ratio = kNaN, output_ratio = kNaN;
  bool weak_evidence = false;  // statistics-only, or resting only on order-aligned pairs
  std::string why;             // one line: "output 412 u from inputs 1.3 u (×317)"
  // Replay of the suspect's ops (`parity compare --replay`, docs/replay.md), filled by the pipeline:
  // "" = not asked; "confirmed" | "refuted" | "inconclusive" | "not_replayed", and the one-line evidence.
  std::string replay_status, replay_evidence;
};

struct Analysis {
  std::optional<FirstDivergence> first_divergence;
  SpillVector<EventError> events;   // in execution order (rank, step, order)
  std::vector<Suspect> suspects;    // best first
  bool statistics_only = false;     // every measured row came from statistics: weaker evidence
  bool has_events = false;          // the sources carry capture metadata (modules/ops/roles)
  NoiseClass worst_noise = NoiseClass::kUnknown;
  // Rows by noise class, except that a row whose final verdict fails counts as structural whatever its
  // class (a parameter failed by its update, a difference structured along the golden): the summary
  // never calls a failing row noise.
  int64_t rows_noise = 0, rows_elevated = 0, rows_structural = 0, rows_unknown = 0;
};

// Groups rows into events, computes local error and ranks suspects. Calls classify_rows when the rows
// are not classified yet (all kUnknown).
// With both sources, the input error of ops whose conditioning parity models (softmax, log-softmax,
// norms, exp/log) is propagated through the op from the recorded tensors (EventError::explained_ratio).
Analysis analyse(CompareResult& result, const AnalysisOptions& options = {}, const RecordSource* golden = nullptr,
                 const RecordSource* target = nullptr);

// Drops the events that no suspect refers to, renumbering Suspect::event: once the diagnoses are made,
// the outputs read only the suspects' events (compare_runs calls it before rendering; at a million
// events the rest held 0.17 GB through the output). Analysis::events is then the suspects' events only.
void keep_suspect_events(Analysis& a);


// ---- divergence timeline: where two long runs part (docs/timeline.md) ------------------------------------
// Over a comparison of many steps, every tensor's error at each step (its row's noise ratio: the error in
// units of one step's expected rounding) is held against the noise that accumulates legitimately from the
// first compared step k0: rounding of every step compounded, growing as the square root of the steps,
//   bound(k) = structural_min · sqrt(k − k0 + 1)   (structural_min: 32 u, NoiseParams).
// A tensor crosses at the first step whose ratio exceeds its bound. The phases of a training step, in the
// order a step computes them: forward, backward, gradient (parameter gradients), clipping (the total norm and
// the clip factor), lr, optimizer_state (moments and the like), update, parameter.
struct TimelineCrossing {
  std::string name, module, phase, role;
  int64_t step = -1;
  int rank = -1;
  size_t row = SIZE_MAX;  // index into CompareResult::rows
  double ratio = kNaN;    // the row's noise ratio at that step
  double bound = kNaN;    // bound(step), in the same units
};

// One tensor's error over the steps (its rows by step).
struct TimelineTensor {
  std::string name, phase;
  int rank = -1;
  int64_t steps = 0;            // steps at which it was measured
  int64_t first_crossing = -1;  // -1: never beyond its bound
  double worst_of_bound = 0;    // max over steps of ratio / bound(step)
  int64_t worst_step = -1;
  // The exponent p of ratio ∝ (k − k0 + 1)^p fitted by least squares on log-log over the steps where the
  // ratio is positive and finite (NaN with fewer than 3 such steps): 0.5 is the square-root growth of
  // independent rounding, larger is error that grows faster than the bound.
  double growth = kNaN;
};

// Per module (its records' module; `<global>` for the optimizer's lr and clipping) and rank: the worst
// ratio / bound of its tensors at each step of DivergenceTimeline::steps (NaN where none was measured).
struct TimelineModule {
  std::string module;
  int rank = -1;
  int64_t first_crossing = -1;
  std::vector<double> of_bound;
};

struct ConfigDifference;  // below

struct DivergenceTimeline {
  std::vector<int64_t> steps;  // the compared steps, ascending
  double per_step_limit = 32;  // structural_min
  std::optional<TimelineCrossing> first;        // the first step's first crossing in execution order
  std::vector<TimelineCrossing> phase_first;    // each phase's first crossing, in phase order
  // What the evidence names: "config" (lr or clip factor differ), "reduction" (the clipping's total norm
  // differs while the gradients as recorded agree), "optimizer" (a moment or update diverges before the
  // gradients), "parameter", "forward", "backward", "gradient"; "" when nothing crosses.
  std::string cause;
  std::string cause_text;                    // one line, the evidence
  std::vector<std::string> config_keys;      // configuration differences that bear on the cause
  std::vector<TimelineTensor> tensors;       // every tensor measured at two steps or more
  std::vector<TimelineModule> modules;
  double median_growth = kNaN;               // over tensors with a growth exponent
};

// The timeline of a classified comparison spanning two steps or more (nullopt otherwise). `config` are
// the fingerprints' differences (config_diff), which name a cause when they bear on it.
std::optional<DivergenceTimeline> divergence_timeline(const CompareResult& result,
                                                      const std::vector<ConfigDifference>& config,
                                                      const AnalysisOptions& options = {});

// ---- configuration differences -------------------------------------------------------------------------
struct ConfigDifference {
  std::string key;          // flattened JSON path, "torch.backends.cuda.matmul.allow_tf32"
  std::string golden, target;  // JSON text of each value ("<absent>" when missing)
  std::string category;     // "precision" | "determinism" | "version" | "environment" | "model" | "other"
  bool numeric = false;     // changes numerics (everything but "other")
};
// Flattened difference of two fingerprint JSON texts. Unparsable JSON gives one difference naming it.
std::vector<ConfigDifference> config_diff(const std::optional<std::string>& golden_json,
                                          const std::optional<std::string>& target_json);

// ---- NaN/Inf origin, near overflow, gradient underflow (one run, no golden needed) ------------------------
struct ValueRange {
  std::string name, role;
  DType dtype = DType::kF32;
  double min = kNaN, max = kNaN, absmax = kNaN;
  int64_t numel = 0, nan_count = 0, inf_count = 0;
};

struct NanOrigin {
  std::string event, module, op, direction;
  int64_t step = -1;
  int rank = -1;
  int64_t order = -1;
  std::vector<ValueRange> inputs, outputs;
  int64_t contaminated = 0;  // later events of this rank/step with NaN/Inf in an output
  bool role_is_grad = false; // the first NaN/Inf is a parameter gradient (loss scale, not an op)
  std::string explanation;   // "exp input max 11.3 > ln(65504) = 11.09: overflows in f16"
};

struct NearOverflow {
  std::string name, event, direction;
  int64_t step = -1;
  int rank = -1;
  DType dtype = DType::kF16;
  double absmax = kNaN, limit = kNaN;  // limit = fraction × max_finite of the dtype
};

struct GradUnderflow {
  std::string name, module;
  int64_t step = -1;
  int rank = -1;
  DType dtype = DType::kF32;
  int64_t numel = 0;
  double zero_fraction = kNaN, subnormal_fraction = kNaN;
  // zero + subnormal share at or above OverflowOptions::underflow_warn_fraction, and not an embedding
  // table (sparse by design): the gradient underflows. The others are listed as measured.
  bool underflowing = false;
};

struct OverflowOptions {
  double near_overflow_fraction = 0.5;  // warn when |x| > 0.5 × max finite (issue 4 §4)
  double underflow_warn_fraction = 0.5;  // a gradient with ≥ 50 % zero+subnormal underflows
  bool load_missing_stats = true;        // compute statistics from tensor data when none are stored
  int64_t step = -1;                     // only records of this step (-1 = all)
  int rank = -1;                         // only records of this rank (-1 = all)
  // Several processes (mpirun): the statistics to compute from tensor data are split into contiguous
  // byte-balanced shares, one per process, and gathered to process 0 (nullptr = this process alone).
  const ProcessGroup* group = nullptr;
  // With a group and a capture divided by rank (open_divided_sources): the source of process p > 0 holds
  // only the ranks rank_shares->ranks[p], whose statistics it computes; process 0's holds everything and
  // it computes those of its own ranks, and of any record nobody sent.
  const RankShares* rank_shares = nullptr;
};

struct OverflowReport {
  std::string source;
  int64_t records = 0, measured = 0, nonfinite_records = 0;
  std::vector<NanOrigin> origins;          // one per (rank, step) that has NaN/Inf
  std::vector<NearOverflow> near_overflow;
  std::vector<GradUnderflow> grad_underflow;  // parameter gradients in f16/bf16 (or with many zeros)
  bool grads_overflow = false;             // some gradient holds NaN/Inf
  bool grads_underflow = false;            // some gradient has ≥ underflow_warn_fraction zero+subnormal
  std::string loss_scale_advice;           // "lower" | "raise" | ""
  std::vector<Status> problems;
};

// A record plus the statistics known for it (stored, computed, or taken from a compare row). Both stay
// where they are (a source's listing, a compare row's statistics, the caller's derived statistics): a
// million-row comparison copies neither once more for the analysis. stats == nullptr: none known.
struct MeasuredRecord {
  const Record* record = nullptr;
  const TensorStats* stats = nullptr;
};

// One side of a compare result as the overflow analysis reads it: `records` point into the result and
// into `derived`, the statistics taken from rows' tensor metrics (a deque: its elements never move).
struct MeasuredSide {
  std::vector<MeasuredRecord> records;
  std::deque<TensorStats> derived;
};

// The analysis over records with statistics (shared by `parity overflow` and `compare`).
OverflowReport analyse_overflow(const std::vector<MeasuredRecord>& records,
                                const OverflowOptions& options = {});
// One run: statistics as stored, else computed from the tensor data. Under a group of several processes
// every process calls it; process 0 returns the report, the others an empty one.
OverflowReport analyse_overflow(const RecordSource& run, const OverflowOptions& options = {});
// The verdict of `parity overflow` on a report: fail when a NaN/Inf is born, a gradient overflows or
// underflows, or a record is unreadable; else pass. `measured == 0` is no answer at all (exit 2).
Verdict overflow_verdict(const OverflowReport& report);
// The target (or golden) side of a compare result, measured from the rows (no re-reading); it points
// into the result, which must outlive it.
MeasuredSide measured_records(const CompareResult& result, bool target_side);

}  // namespace parity
