// classify_rows: the rounding-noise class of every compared row (docs/judgement.md "Noise unit").
#include <algorithm>
#include <cmath>
#include <climits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "analysis/event_index.h"
#include "analysis/mask_flip.h"
#include "analysis/sum_scale.h"
#include "nlohmann/json.hpp"
#include "parity/analysis.h"
#include "parity/noise.h"

namespace parity {

using analysis_detail::has_capture_metadata;
using analysis_detail::is_elementwise_op;
using analysis_detail::Slot;
using analysis_detail::slot_of;
using analysis_detail::SumScale;
using analysis_detail::SumScales;

int64_t op_reduction_length(const std::string& op, const Shape* first_float_input, const Shape& output) {
  if (is_elementwise_op(op)) return 1;
  const Shape& s = first_float_input ? *first_float_input : output;
  if (s.empty()) return 1;
  return std::max<int64_t>(s.back(), 1);
}

namespace {

// Reduction length of a row: op_reduction_length of its event's op (the last dimension of its first floating
// input unless the op is elementwise; without a floating input recorded, the last dimension of the row
// itself, which is the feature dimension for activations).
int64_t reduction_length_for(const CompareRow& row, const Record* first_float_input) {
  const Record& g = *row.golden;
  if (slot_of(g) == Slot::kParameter) return 1;  // a stored parameter is rounded once
  const Shape* first = first_float_input ? &static_cast<const Shape&>(first_float_input->shape) : nullptr;
  return op_reduction_length(g.op, first, g.shape);
}

// The unit roundoff of fp32 matmuls a fingerprint declares: TF32 (10-bit mantissa, u = 2^-11) when
// torch.backends.cuda.matmul.allow_tf32 is on or float32_matmul_precision is "high"; bf16 (2^-8) for
// "medium" (torch docs, "torch.set_float32_matmul_precision"). 0 when the run asked for full fp32.
// cudnn's allow_tf32 is on by default and says nothing about CPU runs: not used.
double declared_matmul_roundoff(const nlohmann::json& j) {
  double u = 0.0;
  if (const auto it = j.find("tf32"); it != j.end() && it->is_object() && it->value("cuda_matmul", false)) u = 0x1p-11;
  if (const auto it = j.find("matmul_precision"); it != j.end() && it->is_string()) {
    if (*it == "high") u = std::max(u, 0x1p-11);
    if (*it == "medium") u = std::max(u, 0x1p-8);
  }
  return u;
}

double roundoff_of_name(std::string_view name) {
  const std::optional<DType> t = dtype_from_name(name);
  return t ? unit_roundoff(*t) : 0.0;
}

// "off", or autocast regions "cpu:bfloat16,cuda:float16" (parity/fingerprint.py autocast_state): the
// coarsest dtype autocast computes in.
double autocast_roundoff(std::string_view regions) {
  double u = 0.0;
  while (!regions.empty()) {
    const size_t comma = regions.find(',');
    std::string_view region = regions.substr(0, comma);
    if (const size_t colon = region.find(':'); colon != std::string_view::npos)
      u = std::max(u, roundoff_of_name(region.substr(colon + 1)));
    regions = comma == std::string_view::npos ? std::string_view() : regions.substr(comma + 1);
  }
  return u;
}

// The precision a capture run declares for its whole computation (docs/judgement.md "Which dtype"): the
// coarsest dtype of its model's parameters, the autocast dtype in effect at a step and a reduced fp32
// matmul precision, all from its fingerprint. It depends neither on the capture level nor on the records
// a filter keeps: the same question gets the same answer.
struct DeclaredPrecision {
  bool known = false;
  double fixed = 0.0;                                // parameters and matmul precision
  std::vector<std::pair<int64_t, double>> autocast;  // (first step, u) in step order; before any entry: 0

  static DeclaredPrecision from(const std::optional<std::string>& fingerprint) {
    DeclaredPrecision d;
    if (!fingerprint) return d;
    const nlohmann::json j = nlohmann::json::parse(*fingerprint, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return d;
    d.fixed = declared_matmul_roundoff(j);
    if (const auto m = j.find("model"); m != j.end() && m->is_object()) {
      if (const auto p = m->find("parameter_dtypes"); p != m->end() && p->is_object()) {
        d.known = true;
        for (const auto& [name, count] : p->items())
          if (count.is_number() && count.get<double>() > 0) d.fixed = std::max(d.fixed, roundoff_of_name(name));
      }
    }
    // precision_by_step: {"autocast": {"0": "off", "5": "cpu:bfloat16"}} (parity/fingerprint.py PrecisionTimeline)
    if (const auto by = j.find("precision_by_step"); by != j.end() && by->is_object()) {
      if (const auto a = by->find("autocast"); a != by->end() && a->is_object()) {
        for (const auto& [step, value] : a->items())
          if (value.is_string()) d.autocast.emplace_back(std::atoll(step.c_str()), autocast_roundoff(value.get<std::string>()));
        std::sort(d.autocast.begin(), d.autocast.end());
      }
    }
    if (const auto a = j.find("autocast"); d.autocast.empty() && a != j.end() && a->is_object() && a->value("cpu", false))
      d.autocast.emplace_back(0, roundoff_of_name(a->value("cpu_dtype", std::string())));
    return d;
  }

  double at(int64_t step) const {
    double u = fixed;
    double in_effect = 0.0;
    for (const auto& [first, a] : autocast)
      if (first <= std::max<int64_t>(step, 0)) in_effect = a;
    return std::max(u, in_effect);
  }
};

// The coarsest float unit roundoff among the records of each event, on either side, in the whole listing
// (not only the compared rows): an op that computes in f16 inside an fp32 run has its f16 record among its
// inputs or outputs, whether or not a filter keeps that record's row.
using EventRoundoff = std::unordered_map<EventKey, double, EventKeyHash>;
void add_event_roundoffs(const RecordList& records, EventRoundoff& out) {
  for (const Record& r : records) {
    if (!dtype_is_float(r.dtype) || r.direction.empty()) continue;
    double& u = out[event_key(r)];
    u = std::max(u, unit_roundoff(r.dtype));
  }
}

// A side without a fingerprint (msprobe dumps, runs written by other tools) declares nothing: its floor is
// the coarsest float dtype anywhere in its listing, per rank.
void take_coarsest(const Record& r, std::map<int, double>& out) {
  if (dtype_is_float(r.dtype)) out[r.rank] = std::max(out[r.rank], unit_roundoff(r.dtype));
}
std::map<int, double> coarsest_per_rank(const RecordList& records) {
  std::map<int, double> out;
  for (const Record& r : records) take_coarsest(r, out);
  return out;
}
std::map<int, double> coarsest_per_rank(const RowList& rows, bool golden_side) {
  std::map<int, double> out;
  for (const CompareRow& row : rows) take_coarsest(golden_side ? *row.golden : *row.target, out);
  return out;
}

// The difference a step's state carries from the steps before it, per (rank, step): the largest relative
// difference (rel L2) of a parameter at that step whose update since the previous captured step was
// measured and does not differ (ParameterUpdate: its gradients explain it). Tensors computed from such
// parameters differ by about as much, whatever their own rounding: optimizers amplify tiny gradient
// differences (Adam's normalisation flips near-zero entries; measured 160x the gradient's relative error
// on a benign fp32 kernel swap), so a step's u is at least this (docs/judgement.md "Parameters across
// steps"). A parameter whose update differs, or that has no earlier step, sets no floor.
std::map<std::pair<int, int64_t>, double> carried_state_error(const CompareResult& result) {
  std::map<std::pair<int, int64_t>, double> state;
  for (const CompareRow& row : result.rows) {
    if (!row.update || row.update->differs) continue;
    const double e = row_observed_error(row);
    if (!std::isfinite(e)) continue;
    double& s = state[{row.golden->rank, row.golden->step}];
    s = std::max(s, e);
  }
  return state;
}

}  // namespace

// ‖g‖₂ and the element count of a row's golden side: from the metrics (tensor mode) or the stored
// statistics (statistics mode); nullopt when neither is known.
std::optional<std::pair<double, int64_t>> golden_norm(const CompareRow& row) {
  if (row.metrics && row.metrics->numel > 0) return std::pair{row.metrics->golden.l2norm, row.metrics->numel};
  if (row.mode == CompareMode::kStatistics && row.stats) {
    const TensorStats& g = golden_stats(row);
    if (g.numel > 0) return std::pair{g.l2norm, g.numel};
  }
  return std::nullopt;
}

// Cancellation (docs/judgement.md "Cancellation"): a backward result whose golden RMS is below
// min(sqrt(u), 2^-10) × the RMS of what it was computed from has lost more than half its significant digits
// (a key-bias gradient is zero in exact arithmetic: both runs hold rounding residue). Its error is then
// measured against that scale: observed × ‖g‖ / (ref RMS × sqrt(n)) — rel L2 becomes RMS(d) / ref RMS in
// tensor mode, the statistics' lower bound likewise in statistics mode. `ref` is the gradient arriving at the
// event's output when recorded (the sum a bias gradient cancels is over it), else the event's first input.
// Forward rows are never re-based (normalisations shrink their input's scale on purpose). Returns the
// observed error to classify and sets row.cancelled.
double cancellation_rebased(CompareRow& row, double observed, double u,
                            const std::optional<std::pair<double, int64_t>>& in) {
  row.cancelled = false;
  if (!in || row.golden->direction != "backward" || !std::isfinite(observed)) return observed;
  const auto out = golden_norm(row);
  if (!out || !in || !(in->first > 0) || !std::isfinite(in->first)) return observed;
  const double out_rms = out->first / std::sqrt(static_cast<double>(out->second));
  const double in_rms = in->first / std::sqrt(static_cast<double>(in->second));
  if (!(out_rms < std::min(std::sqrt(u), 0x1p-10) * in_rms)) return observed;
  row.cancelled = true;
  return observed * out->first / (in_rms * std::sqrt(static_cast<double>(out->second)));
}

// A gradient that is a sum over a broadcast dimension (docs/judgement.md "Sums that cancel"; SumScales):
// rounding errs by expected(u, n)·‖terms‖, so its error is measured against ‖terms‖ = factor·‖g‖ with the
// sum's n terms — observed / factor — only where the sum cancelled (factor > 2).
// A sum whose terms' scale is more than twice its own norm has lost at least one bit to cancellation; below
// that the model's ‖g‖-relative allowance (leading constant 1, measured 0.2–2.2 on single ops) covers it.
constexpr double kCancelledSum = 2.0;

double sum_rebased(CompareRow& row, double observed, const std::optional<SumScale>& sum, int64_t& n) {
  row.sum_cancellation = 0.0f;
  if (!sum || !(sum->factor > kCancelledSum) || !std::isfinite(observed)) return observed;
  row.cancelled = true;
  row.sum_cancellation = static_cast<float>(sum->factor);
  n = std::max(n, sum->terms);
  return observed / sum->factor;
}

// The noise class of one row for unit roundoff u (docs/judgement.md "The model"). `input_shape`: the error
// shape of its event's first float input, when that row was measured as a tensor.
void classify_row(CompareRow& row, double u, const Record* first_input,
                  const std::optional<std::pair<double, int64_t>>& cancellation_ref,
                  const std::optional<SumScale>& sum, const std::optional<ErrorShape>& input_shape,
                  const AnalysisOptions& options) {
  const double observed = row_observed_error(row);
  int64_t n = reduction_length_for(row, first_input);
  const double obs = sum_rebased(row, cancellation_rebased(row, observed, u, cancellation_ref), sum, n);
  const NoiseJudgement j = classify_noise(obs, u, n, options.noise);
  row.noise = j.cls;
  row.noise_ratio = j.ratio;
  // The shape of the error, not only its size (docs/judgement.md "The shape of an error"): a difference
  // along the golden that rounding cannot put there is structure even within a reduction's allowance.
  // Such a row is measured by its part along g against what rounding puts along g (expected/sqrt(n_eff)):
  // ratio × z, so the local error, the suspects and the first divergence see it like any other error.
  // Judged where the structure is made: not on what an event consumes (its input rows: the same tensor as
  // the producer's output, which is judged with the producer's reduction length — an elementwise consumer's
  // n = 1 gave one tensor two verdicts), and not on an output whose event's input is already aligned with
  // its golden about as strongly (z at least half the output's: bf16 gradients a few tenths of a percent
  // short, squared into Adam's exp_avg_sq, are inherited structure, not made by addcmul).
  const bool made_here = slot_of(*row.golden) != Slot::kInput;
  const ErrorShape shape = made_here && obs == observed && row.metrics && !row.golden->shape.empty()
                               ? error_shape(*row.metrics, row.golden->shape.back())
                               : ErrorShape{};
  const bool inherited = input_shape && input_shape->z >= 0.5 * shape.z;
  row.error_structured = !inherited && error_is_structured(shape, j.expected);
  if (row.error_structured) {
    row.noise_ratio = std::max(j.ratio, shape.z * j.ratio);
    row.noise = noise_class_of_ratio(row.noise_ratio, options.noise);
  }
}

// Per event: its first floating input record (lowest index) and the gradient arriving at its output
// (backward/input/0), both of the golden side.
class EventRecords {
 public:
  void add(const Record& r) {
    if (slot_of(r) != Slot::kInput || !dtype_is_float(r.dtype)) return;
    const EventKey key = event_key(r);
    auto [it, inserted] = first_.try_emplace(key, &r);
    if (!inserted && r.index < it->second->index) it->second = &r;
    if (r.direction == "backward" && r.index == 0) arriving_[key] = &r;
  }
  const Record* first_input(const Record& r) const { return find(first_, r); }
  const Record* arriving_grad(const Record& r) const { return find(arriving_, r); }

 private:
  using Map = std::unordered_map<EventKey, const Record*, EventKeyHash>;
  static const Record* find(const Map& m, const Record& r) {
    auto it = m.find(event_key(r));
    return it == m.end() ? nullptr : it->second;
  }
  Map first_, arriving_;
};

// Discrete decisions that flip (docs/judgement.md "Decision flips"). An integer or boolean output of a
// decision op (top-k / sort indices, argmax, a comparison mask) that differs while the op's float inputs
// differ by rounding only (noise or elevated) is a flip: a tie broken the other way, not a fault. The flip
// row is elevated (shown, never failing); a row of the block it steers (steered_block: a router's MoE
// block), forward and backward, that differs beyond rounding is judged given the flip — elevated, "affected"
// — whether or not earlier rows of the block differed as much (so a module-level and an op-level capture
// judge it alike); what the block's rows differ by is carried, like a step's state, into the later rows of
// the rank and step outside the block.
class DecisionFlips {
 public:
  // The ambient floor the flips before this row set (0 without one, and 0 inside a block a flip steers:
  // those rows are judged given the flip instead).
  double floor(const Record& g) const {
    double f = 0.0;
    for (const Flip& x : flips_)
      if (x.rank == g.rank && x.step == g.step && g.order > x.order) {
        if (steers(x, g)) return 0.0;
        f = std::max(f, x.carried);
      }
    return f;
  }

  void judge(CompareRow& row, const std::unordered_map<EventKey, double, EventKeyHash>& worst_input_ratio,
             const NoiseParams& params) {
    const Record& g = *row.golden;
    if (is_flip(row, worst_input_ratio, params)) {
      row.flip = FlipRole::kDecision;
      row.noise = NoiseClass::kElevated;
      row.noise_ratio = kNaN;  // judged as a decision, not by the noise model (nor by the local error)
      flips_.push_back({g.rank, g.step, g.order, steered_block(g), 0.0});
      return;
    }
    for (Flip& x : flips_) {
      if (!steers(x, g)) continue;
      if ((row.noise == NoiseClass::kStructural || row.noise == NoiseClass::kElevated) &&
          row.fixed_verdict != Verdict::kError) {
        row.flip = FlipRole::kAffected;
        row.noise = NoiseClass::kElevated;
        row.noise_ratio = kNaN;
      }
      const double e = row_observed_error(row);
      if (std::isfinite(e) && dtype_is_float(g.dtype)) x.carried = std::max(x.carried, e);
    }
  }

  // A ReLU mask flip (judge_given_mask_flip): the gradient it passes back differs by `error` at the flipped
  // positions, and every gradient computed from it later in the step carries that difference.
  void carry(const Record& g, double error) {
    if (std::isfinite(error)) flips_.push_back({g.rank, g.step, g.order, "", error});
  }

 private:
  struct Flip {
    int rank;
    int64_t step, order;
    std::string block;  // the block the decision steers; "" for a mask flip, which only carries its error
    double carried;     // the largest relative difference of the block's float rows so far
  };
  std::vector<Flip> flips_;

  // Whether flip x steers the computation of the row of golden record g (a later row of its block).
  static bool steers(const Flip& x, const Record& g) {
    return !x.block.empty() && x.rank == g.rank && x.step == g.step && g.order > x.order && in_module(g.module, x.block);
  }

  static bool is_flip(const CompareRow& row, const std::unordered_map<EventKey, double, EventKeyHash>& worst_input_ratio,
                      const NoiseParams& params) {
    const Record& g = *row.golden;
    // Any op or module with float inputs and an integer or boolean output decides: top-k indices, argmax,
    // a comparison mask, a router module's expert indices at module level.
    if (dtype_is_float(g.dtype) || slot_of(g) != Slot::kOutput) return false;
    if (!(row_observed_error(row) > 0)) return false;  // the decision agrees
    const auto it = worst_input_ratio.find(event_key(g));
    return it != worst_input_ratio.end() && it->second <= params.structural_min;
  }
};

// The pre-activations of ReLU events, by (rank, step, name) on each side, read from the listings the first
// time a ReLU gradient needs them (a filter that leaves them out changes nothing).
class ReluInputs {
 public:
  std::pair<const Record*, const Record*> of(const Record& grad, const RecordSource& golden, const RecordSource& target) {
    if (!built_) {
      index(golden.records(), golden_);
      index(target.records(), target_);
      built_ = true;
    }
    const Key key{grad.rank, grad.step, analysis_detail::relu_input_name(grad)};
    const auto g = golden_.find(key), t = target_.find(key);
    return {g == golden_.end() ? nullptr : g->second, t == target_.end() ? nullptr : t->second};
  }

 private:
  using Key = std::tuple<int, int64_t, std::string>;
  static void index(const RecordList& records, std::map<Key, const Record*>& out) {
    for (const Record& r : records)
      if (r.direction == "forward" && r.role == "input" && r.index == 0 && r.has_data &&
          (r.op == "relu" || r.op == "relu_" || r.op == "ReLU"))
        out.emplace(Key{r.rank, r.step, r.name.str()}, &r);
  }
  bool built_ = false;
  std::map<Key, const Record*> golden_, target_;
};

// A ReLU's input gradient beyond rounding whose pre-activations agree within rounding: measured outside the
// positions where the two runs' pre-activations fall on different sides of 0 (docs/judgement.md "ReLU
// masks"). When that residual is within the structural bound, the row is a mask flip (flip "mask"): its
// noise ratio is the residual's, and the flipped positions are counted, not failed. Returns whether it was.
bool judge_given_mask_flip(CompareRow& row, ReluInputs& inputs, const std::unordered_map<const Record*, size_t>& row_of,
                           const RowList& rows, const RecordSource& golden, const RecordSource& target,
                           const NoiseParams& params) {
  const Record& g = *row.golden;
  if (row.noise != NoiseClass::kStructural || row.mode != CompareMode::kTensor ||
      !analysis_detail::is_relu_input_gradient(g))
    return false;
  const auto [gx, tx] = inputs.of(g, golden, target);
  if (gx == nullptr || tx == nullptr) return false;
  // A pre-activation that differs structurally moves the mask for a reason: that is no tie.
  if (const auto it = row_of.find(gx); it != row_of.end() && rows[it->second].noise == NoiseClass::kStructural) return false;
  const double observed = row_observed_error(row);
  if (!(observed > 0) || !std::isfinite(observed)) return false;
  Result<analysis_detail::MaskFlip> f =
      analysis_detail::measure_mask_flip(g, *row.target, *gx, *tx, golden, target, row.loss_scale_log2);
  if (!f.ok() || f->flipped == 0) return false;
  const double ratio = row.noise_ratio * f->residual / observed;
  if (!(ratio <= params.structural_min)) return false;
  row.flip = FlipRole::kMask;
  row.mask_flips = static_cast<int32_t>(std::min<int64_t>(f->flipped, INT32_MAX));
  row.noise_ratio = ratio;
  row.noise = ratio <= params.noise_max ? NoiseClass::kNoise : NoiseClass::kElevated;
  return true;
}

// The rows a name filter hides but measured as context (CompareResult::context) are classified with the
// shown rows, in execution order among them, and then set aside again.
class WithContextRows {
 public:
  explicit WithContextRows(CompareResult& result) : result_(result), shown_(result.rows.size()) {
    for (CompareRow& row : result_.context) result_.rows.push_back(std::move(row));
    result_.context.clear();
  }
  ~WithContextRows() {
    for (size_t k = shown_; k < result_.rows.size(); ++k) result_.context.push_back(std::move(result_.rows[k]));
    result_.rows.resize(shown_);
  }
  WithContextRows(const WithContextRows&) = delete;
  WithContextRows& operator=(const WithContextRows&) = delete;

 private:
  CompareResult& result_;
  size_t shown_;
};

namespace {

// The golden records a row's references are looked up in: the whole listing when it is known — so that a
// filter that leaves records out changes no verdict — else the rows'.
std::vector<const Record*> golden_listing(const CompareResult& result, const RecordSource* golden) {
  std::vector<const Record*> listing;
  if (golden) {
    for (const Record& r : golden->records()) listing.push_back(&r);
  } else {
    for (const CompareRow& row : result.rows) listing.push_back(row.golden);
  }
  return listing;
}

// The coarsest unit roundoff among each event's records, either side: the whole listings when known, else
// the rows'.
EventRoundoff event_roundoffs(const CompareResult& result, const RecordSource* golden, const RecordSource* target) {
  EventRoundoff event_u;
  if (golden && target) {
    add_event_roundoffs(golden->records(), event_u);
    add_event_roundoffs(target->records(), event_u);
    return event_u;
  }
  for (const CompareRow& row : result.rows) {
    for (const Record* r : {row.golden, row.target}) {
      if (!dtype_is_float(r->dtype)) continue;
      double& u = event_u[event_key(*r)];
      u = std::max(u, unit_roundoff(r->dtype));
    }
  }
  return event_u;
}

// Ambient unit roundoff of each row (docs/judgement.md "Which dtype, which n"): the coarsest of the
// dtypes its own event computed in (every record of the event, either side), the precision each run
// declares (parameters, autocast, matmul precision: a bf16 model carries bf16 noise into the fp32 islands
// of its norms), and the difference the step's state carries from earlier steps. Not "any dtype seen
// earlier": one f16 op of an fp32 run does not make every later row an f16 row.
std::vector<double> ambient_roundoffs(const CompareResult& result, const RecordSource* golden,
                                      const RecordSource* target) {
  std::vector<double> ambient(result.rows.size(), 0.0);
  const EventRoundoff event_u = event_roundoffs(result, golden, target);
  const DeclaredPrecision declared_g = DeclaredPrecision::from(result.golden_fingerprint);
  const DeclaredPrecision declared_t = DeclaredPrecision::from(result.target_fingerprint);
  // Without the sources (a caller holding rows only) the listing is the rows.
  std::map<int, double> undeclared_g, undeclared_t;
  if (!declared_g.known) undeclared_g = golden ? coarsest_per_rank(golden->records()) : coarsest_per_rank(result.rows, true);
  if (!declared_t.known) undeclared_t = target ? coarsest_per_rank(target->records()) : coarsest_per_rank(result.rows, false);
  const std::map<std::pair<int, int64_t>, double> state = carried_state_error(result);
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const Record& g = *result.rows[i].golden;
    double u = std::max(declared_g.at(g.step), declared_t.at(g.step));
    if (auto it = undeclared_g.find(g.rank); it != undeclared_g.end()) u = std::max(u, it->second);
    if (auto it = undeclared_t.find(g.rank); it != undeclared_t.end()) u = std::max(u, it->second);
    if (auto it = event_u.find(event_key(g)); it != event_u.end()) u = std::max(u, it->second);
    // A step starts from the state the steps before it computed (parameters updated from gradients of
    // another precision): their carried difference is the floor of this step and the later ones.
    for (auto it = state.lower_bound({g.rank, INT64_MIN}); it != state.end() && it->first.first == g.rank &&
                                                            it->first.second <= g.step; ++it)
      u = std::max(u, it->second);
    ambient[i] = u;
  }
  return ambient;
}

// What a capture's rows are judged with besides their own metrics: each event's first floating input (its
// reduction length) and the gradient arriving at its output (backward/input/0: the cancellation
// reference), the scale of the sums arriving gradients are, and the row of each golden record.
class RowReferences {
 public:
  RowReferences(const CompareResult& result, const RecordSource* golden)
      : result_(result), listing_(golden_listing(result, golden)) {
    for (const Record* r : listing_) events_.add(*r);
    for (size_t i = 0; i < result.rows.size(); ++i) row_of_.emplace(result.rows[i].golden, i);
    sums_.emplace(listing_, [this](const Record& r) { return norm(&r); });
  }

  // ‖g‖ and element count of a reference record: its stored statistics, else its row's.
  std::optional<std::pair<double, int64_t>> norm(const Record* r) const {
    if (r == nullptr) return std::nullopt;
    if (r->stats && r->stats->numel > 0) return std::pair{r->stats->l2norm, r->stats->numel};
    if (auto it = row_of_.find(r); it != row_of_.end()) return golden_norm(result_.rows[it->second]);
    return std::nullopt;
  }

  EventRecords& events() { return events_; }
  SumScales& sums() { return *sums_; }
  const std::unordered_map<const Record*, size_t>& row_of() const { return row_of_; }

  // The shape of the error of the row that measured `input` (the event's first input), when it has metrics.
  std::optional<ErrorShape> input_error_shape(const Record* input) const {
    if (!input) return std::nullopt;
    const auto it = row_of_.find(input);
    if (it == row_of_.end()) return std::nullopt;
    const CompareRow& in = result_.rows[it->second];
    if (!in.metrics || in.golden->shape.empty()) return std::nullopt;
    return error_shape(*in.metrics, in.golden->shape.back());
  }

 private:
  const CompareResult& result_;
  std::vector<const Record*> listing_;
  EventRecords events_;
  std::unordered_map<const Record*, size_t> row_of_;  // the row of a golden record, for its measured norm
  std::optional<SumScales> sums_;
};

}  // namespace

void classify_rows(CompareResult& result, const AnalysisOptions& options, const RecordSource* golden,
                   const RecordSource* target) {
  const WithContextRows with_context(result);
  const bool capture = has_capture_metadata(result);
  std::optional<RowReferences> refs;
  if (capture) refs.emplace(result, golden);
  const std::vector<double> ambient =
      capture ? ambient_roundoffs(result, golden, target) : std::vector<double>(result.rows.size(), 0.0);

  // In execution order: a decision flip (topk, argmax, a comparison mask) changes how the rows after it are
  // judged (DecisionFlips).
  DecisionFlips flips;
  ReluInputs relu_inputs;
  std::unordered_map<EventKey, double, EventKeyHash> worst_input_ratio;
  for (size_t i : rows_in_execution_order(result.rows)) {
    CompareRow& row = result.rows[i];
    const Record& g = *row.golden;
    double u = pair_unit_roundoff(g.dtype, row.target->dtype);
    // Integer rows (token ids, masks) stay exact whatever the ambient precision.
    const bool is_float = dtype_is_float(g.dtype) || dtype_is_float(row.target->dtype);
    if (is_float) u = std::max(u, std::max(ambient[i], flips.floor(g)));
    if (!capture) {
      classify_row(row, u, nullptr, std::nullopt, std::nullopt, std::nullopt, options);
      continue;
    }
    const Record *first_input = nullptr, *reference = nullptr;
    if (slot_of(g) != Slot::kInput) {
      first_input = reference = refs->events().first_input(g);
      if (const Record* a = refs->events().arriving_grad(g)) reference = a;
    }
    std::optional<SumScale> sum;
    if (slot_of(g) == Slot::kInput && g.direction == "backward" && is_float) sum = refs->sums().of(g);
    classify_row(row, u, first_input, refs->norm(reference), sum, refs->input_error_shape(first_input), options);
    if (golden && target &&
        judge_given_mask_flip(row, relu_inputs, refs->row_of(), result.rows, *golden, *target, options.noise))
      flips.carry(g, row_observed_error(row));
    if (slot_of(g) == Slot::kInput && is_float && !std::isnan(row.noise_ratio)) {
      double& w = worst_input_ratio[event_key(g)];
      w = std::max(w, row.noise_ratio);
    }
    flips.judge(row, worst_input_ratio, options.noise);
  }
  result.classified = true;
}

void ensure_classified(CompareResult& result, const AnalysisOptions& options, const RecordSource* golden,
                       const RecordSource* target) {
  if (!result.classified) classify_rows(result, options, golden, target);
}

}  // namespace parity
