// analyse: local error of every event (sources vs carriers) and the ranked suspects.
//
// For an event with worst input/parameter noise ratio r_in and worst output ratio r_out, the error it
// creates is A = r_out / max(r_in, 1) (inputs below one expected rounding count as one rounding). An
// event whose output leaves the noise class with A ≥ source_amplification is a source; one whose output
// is beyond noise but follows its inputs is a carrier. Error that is already present where the model
// starts (its first inputs) or in parameters before any computation is reported as its own suspect kind.
// docs/judgement.md "Sources and carriers".
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "analysis/conditioning.h"
#include "analysis/event_index.h"
#include "analysis/one_sided_ops.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "parity/analysis.h"
#include "parity/dtype.h"

namespace parity {

using analysis_detail::direction_rank;
using analysis_detail::has_capture_metadata;
using analysis_detail::add_one_sided_op_suspects;
using analysis_detail::has_conditioning_model;
using analysis_detail::propagated_relative_error;
using analysis_detail::Slot;
using analysis_detail::slot_of;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Aligned pairs at least this confident count as measurements (the verdict policy's bound, verdict_policy.h).
constexpr double kStrongPairing = kStrongPairingConfidence;

// NaN-ignoring max.
void take_max(double& acc, double v) {
  if (std::isnan(v)) return;
  acc = std::isnan(acc) ? v : std::max(acc, v);
}

// NaN/Inf the target holds beyond the golden's, in one row (0 when unknown).
int64_t target_extra_nonfinite(const CompareRow& row) {
  if (!row.metrics && !row.stats) return 0;
  const TensorStats& g = row.metrics ? row.metrics->golden : golden_stats(row);
  const TensorStats& t = row.metrics ? row.metrics->target : target_stats(row);
  return std::max<int64_t>(0, (t.nan_count + t.inf_count) - (g.nan_count + g.inf_count));
}

// Loads a record's tensor as doubles (empty on any failure: the caller then falls back).
std::vector<double> load_doubles(const RecordSource& src, const Record& r) {
  if (!r.has_data) return {};
  Result<TensorView> v = src.load(r);
  if (!v.ok()) return {};
  std::vector<double> out(static_cast<size_t>(v->numel));
  decode_to_double(*v, 0, v->numel, out.data());
  return out;
}

// The op's reduced dimension is the last one: softmax's `dim` argument is -1 or ndim-1; a norm's
// normalized_shape has one entry (module norms normalise the last dimension).
bool reduces_last_dim(const RecordSource& src, const Record& out, size_t ndim) {
  const std::string text = src.op_arguments_json(out);
  if (text.empty()) return out.op.find("orm") != std::string::npos;  // module events: RMSNorm, LayerNorm
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  const nlohmann::json args = j.value("args", nlohmann::json::array());
  const nlohmann::json kwargs = j.value("kwargs", nlohmann::json::object());
  if (out.op.find("norm") != std::string::npos) {
    const nlohmann::json shape = kwargs.contains("normalized_shape") ? kwargs["normalized_shape"]
                                 : args.size() > 1                    ? args[1]
                                                                      : nlohmann::json();
    return shape.is_array() && shape.size() == 1;
  }
  if (out.op == "exp" || out.op == "log") return true;
  const nlohmann::json dim = kwargs.contains("dim") ? kwargs["dim"] : args.size() > 1 ? args[1] : nlohmann::json();
  if (!dim.is_number_integer()) return false;
  const int64_t d = dim.get<int64_t>();
  return d == -1 || d == static_cast<int64_t>(ndim) - 1;
}

// The event's output error that its first input's error explains, in units of the output's expected
// rounding (NaN when the op has no conditioning model or the tensors are not there).
double explained_output_ratio(const CompareResult& result, const EventError& e, const RecordSource& golden,
                              const RecordSource& target) {
  if (!has_conditioning_model(e.op)) return kNaN;
  const CompareRow* in = nullptr;
  const CompareRow* out = nullptr;
  for (size_t i : e.rows) {
    const CompareRow& row = result.rows[i];
    if (row.golden->index != 0 || row.mode != CompareMode::kTensor || !row.metrics) continue;
    if (slot_of(*row.golden) == Slot::kInput) in = &row;
    if (slot_of(*row.golden) == Slot::kOutput) out = &row;
  }
  if (!in || !out || in->golden->shape.empty() || in->golden->shape != out->golden->shape) return kNaN;
  if (!(out->metrics->rel_l2 > 0) || !(out->noise_ratio > 0) || std::isinf(out->noise_ratio)) return kNaN;
  if (!reduces_last_dim(golden, *out->golden, in->golden->shape.size())) return kNaN;
  const std::vector<double> xg = load_doubles(golden, *in->golden);
  std::vector<double> xt = load_doubles(target, *in->target);
  // A loss-scaled target is compared unscaled (parity/loss_scale.h): its input error too.
  if (in->loss_scale_log2 != 0)
    for (double& x : xt) x = std::ldexp(x, -in->loss_scale_log2);
  const std::vector<double> yg = load_doubles(golden, *out->golden);
  const std::optional<double> rel = propagated_relative_error(e.op, xg, xt, yg, in->golden->shape.back());
  if (!rel) return kNaN;
  // noise_ratio = rel_l2 / expected, so expected = rel_l2 / noise_ratio.
  return *rel * out->noise_ratio / out->metrics->rel_l2;
}

double log2_score(double ratio) {
  if (std::isinf(ratio)) return kInf;
  if (std::isnan(ratio) || ratio <= 0) return 0;
  return std::log2(ratio);
}

// Is `inner` contained in `outer` (a call inside a module call)? By execution-order span when both
// spans are proper, else by module path (a submodule of the outer module).
bool contains(const EventError& outer, const EventError& inner) {
  if (&outer == &inner || outer.rank != inner.rank || outer.step != inner.step ||
      outer.direction != inner.direction)
    return false;
  if (outer.first_order >= 0 && inner.first_order >= 0 && outer.first_order < outer.last_order) {
    if (outer.first_order <= inner.first_order && inner.last_order <= outer.last_order &&
        (outer.first_order != inner.first_order || outer.last_order != inner.last_order))
      return true;
  }
  if (outer.module.empty())  // (same rank and step here: another event is another name)
    return !inner.module.empty() && outer.name != inner.name && outer.first_order >= 0 &&
           inner.first_order >= outer.first_order && inner.last_order <= outer.last_order;
  return inner.module.size() > outer.module.size() && inner.module.starts_with(outer.module) &&
         inner.module[outer.module.size()] == '.';
}

// ---- stages of analyse() ------------------------------------------------------------------------------------

// Row counts by noise class, and whether the evidence is statistics only.
void count_rows(const CompareResult& result, Analysis& a) {
  int64_t measured = 0, stats_rows = 0;
  for (const CompareRow& row : result.rows) {
    // A failing row is not noise whatever its class says (its update or the shape of its error failed it).
    switch (row.verdict == Verdict::kFail ? NoiseClass::kStructural : row.noise) {
      case NoiseClass::kNoise: ++a.rows_noise; break;
      case NoiseClass::kElevated: ++a.rows_elevated; break;
      case NoiseClass::kStructural: ++a.rows_structural; break;
      case NoiseClass::kUnknown: ++a.rows_unknown; break;
    }
    if (row.noise != NoiseClass::kUnknown) {
      ++measured;
      if (row.mode == CompareMode::kStatistics) ++stats_rows;
    }
  }
  a.statistics_only = measured > 0 && stats_rows == measured;
  a.worst_noise = a.rows_structural ? NoiseClass::kStructural
                  : a.rows_elevated ? NoiseClass::kElevated
                  : a.rows_noise    ? NoiseClass::kNoise
                                    : NoiseClass::kUnknown;
}

// What grouping the rows leaves per event for settle_events (a million events: vectors, no hash maps).
struct EventEvidence {
  std::unordered_set<size_t> inputs_nonfinite;   // events whose target inputs hold NaN/Inf
  std::vector<int> aligned_outputs, measured_outputs;
  // The worst ratio of its float inputs, and of its discrete (integer or boolean) outputs with the row
  // that holds it — a decision's output counts only when its float inputs agree (settle_events).
  std::vector<double> float_input_ratio, decision_ratio;
  std::vector<size_t> decision_row;

  void add_event() {
    aligned_outputs.push_back(0);
    measured_outputs.push_back(0);
    float_input_ratio.push_back(kNaN);
    decision_ratio.push_back(kNaN);
    decision_row.push_back(SIZE_MAX);
  }
};

// One output (or other) row's evidence on its event k.
void add_output_row(const CompareRow& row, size_t i, size_t k, int64_t extra_nonfinite, EventError& e,
                    EventEvidence& ev) {
  const Record& g = *row.golden;
  if (extra_nonfinite > 0) e.nonfinite_born = true;
  if (row.noise != NoiseClass::kUnknown) {
    ev.aligned_outputs[k] += row.match == MatchKind::kAligned ? 1 : 0;
    ev.measured_outputs[k] += 1;
  }
  if (!dtype_is_float(g.dtype) && slot_of(g) == Slot::kOutput) {
    if (!std::isnan(row.noise_ratio) && !(row.noise_ratio <= ev.decision_ratio[k])) {
      ev.decision_ratio[k] = row.noise_ratio;
      ev.decision_row[k] = i;
    }
    return;
  }
  if (!std::isnan(row.noise_ratio) &&
      (std::isnan(e.output_ratio) || row.noise_ratio > e.output_ratio || e.worst_output_row == SIZE_MAX)) {
    if (std::isnan(e.output_ratio) || row.noise_ratio >= e.output_ratio) e.worst_output_row = i;
  }
  take_max(e.output_ratio, row.noise_ratio);
}

// Row i's evidence on its event k.
void add_row(const CompareRow& row, size_t i, size_t k, EventError& e, EventEvidence& ev) {
  const Record& g = *row.golden;
  e.rows.push_back(i);
  if (g.order >= 0) {
    e.first_order = e.first_order < 0 ? g.order : std::min(e.first_order, g.order);
    e.last_order = std::max(e.last_order, g.order);
  }
  if (row.noise != NoiseClass::kUnknown && row.mode != CompareMode::kStatistics) e.statistics_only = false;
  const int64_t extra_nonfinite = target_extra_nonfinite(row);
  if (slot_of(g) == Slot::kInput && extra_nonfinite > 0) ev.inputs_nonfinite.insert(k);
  // A pair that only a weak order alignment put together (two implementations of one module) is no
  // evidence of where error is created: the event keeps its place in the order but measures nothing.
  if (row.match == MatchKind::kAligned && row.match_confidence < kStrongPairing) return;
  switch (slot_of(g)) {
    case Slot::kInput:
      take_max(e.input_ratio, row.noise_ratio);
      if (dtype_is_float(g.dtype)) take_max(ev.float_input_ratio[k], row.noise_ratio);
      break;
    case Slot::kParameter: take_max(e.param_ratio, row.noise_ratio); break;
    case Slot::kOutput:
    case Slot::kOther: add_output_row(row, i, k, extra_nonfinite, e, ev); break;
  }
}

// The rows grouped into events (a.events), in execution order. Keys of the current (rank, step) stream
// only: rows come stream by stream, and an event's key holds its rank and step, so no event spans two
// streams (a map of every event held 0.07 GB at a million).
EventEvidence group_rows_into_events(const CompareResult& result, Analysis& a) {
  EventEvidence ev;
  std::unordered_map<EventKey, size_t, EventKeyHash> by_key;
  std::optional<std::pair<int, int64_t>> stream;
  for (size_t i : rows_in_execution_order(result.rows)) {
    const CompareRow& row = result.rows[i];
    const Record& g = *row.golden;
    if (stream != std::pair{g.rank, g.step}) {
      by_key.clear();
      stream = std::pair{g.rank, g.step};
    }
    auto [it, inserted] = by_key.emplace(event_key(g), a.events.size());
    if (inserted) {
      EventError e = analysis_detail::event_error_of(g);
      e.statistics_only = true;
      a.events.push_back(std::move(e));
      ev.add_event();
    }
    add_row(row, i, it->second, a.events[it->second], ev);
  }
  return ev;
}

// Per event: NaN/Inf carried in are not born here; aligned-only evidence; the decision outputs.
void settle_events(Analysis& a, const EventEvidence& ev, const AnalysisOptions& options) {
  for (size_t k = 0; k < a.events.size(); ++k) {
    EventError& e = a.events[k];
    if (ev.inputs_nonfinite.count(k)) e.nonfinite_born = false;  // carried in, not born here
    e.aligned_only = ev.measured_outputs[k] > 0 && ev.aligned_outputs[k] == ev.measured_outputs[k];
    // A discrete decision (top-k indices, argmax, a mask) computed from float inputs that already differ
    // beyond noise flips as a consequence of that difference: it creates no error of its own, and its
    // exact-by-dtype output ("non-finite" units when it differs) must not outrank the upstream event that
    // created the error (docs/judgement.md "Decision flips"). With agreeing float inputs (or none: an
    // index computed from indices) its output is the event's own, as any other.
    const bool decided_from_differing_floats = ev.float_input_ratio[k] > options.noise.noise_max;
    if (!std::isnan(ev.decision_ratio[k]) && !decided_from_differing_floats &&
        (std::isnan(e.output_ratio) || ev.decision_ratio[k] > e.output_ratio)) {
      e.output_ratio = ev.decision_ratio[k];
      e.worst_output_row = ev.decision_row[k];
    }
  }
}

// Events by (rank, step, direction, first order). Usually sorted already (rows come in execution
// order, backward after forward); stable_sort would still take a buffer the size of the events.
void sort_events_by_stream(Analysis& a) {
  const auto in_stream_order = [](const EventError& x, const EventError& y) {
    return std::make_tuple(x.rank, x.step, direction_rank(x.direction), x.first_order) <
           std::make_tuple(y.rank, y.step, direction_rank(y.direction), y.first_order);
  };
  if (!std::is_sorted(a.events.begin(), a.events.end(), in_stream_order))
    std::stable_sort(a.events.begin(), a.events.end(), in_stream_order);
}

// Parameters of sub-modules count as inputs of every module that contains them: a decoder layer (or the
// root) whose weights differ only through its children does not create that error itself. Per event:
// the worst parameter ratio of the modules it contains (NaN: none).
std::vector<double> contained_parameter_ratios(const Analysis& a) {
  std::map<std::tuple<int, int64_t, std::string>, double> param_by_module;
  for (const EventError& e : a.events)
    if (!std::isnan(e.param_ratio)) take_max(param_by_module[{e.rank, e.step, e.module}], e.param_ratio);
  std::vector<double> contained(a.events.size(), kNaN);
  for (size_t k = 0; k < a.events.size(); ++k) {
    const EventError& e = a.events[k];  // backward too: a gradient depends on the forward weights
    for (const auto& [key, ratio] : param_by_module) {
      const auto& [rank, step, module] = key;
      if (rank != e.rank || step != e.step) continue;
      const bool inside = e.module == "<root>" || module == e.module ||
                          (module.size() > e.module.size() && module.compare(0, e.module.size(), e.module) == 0 &&
                           module[e.module.size()] == '.');
      if (inside) take_max(contained[k], ratio);
    }
  }
  return contained;
}

// An optimizer event (`<module>/optimizer`, `<global>/optimizer`) records no inputs of its own: what it
// computes from are records of other events. Its inputs are taken to be (docs/judgement.md "Optimizer
// events"): the step's parameter gradients (`<module>/backward/grad/*` of its module and the modules inside
// it; every gradient of the step for `<global>`, whose total norm reads them all), the `<global>` event of
// the step for a module (the lr and the clip factor that scale its update), and its own outputs at the
// rank's previous step with one (the moments it carries from step to step). The parameters come in through
// contained_parameter_ratios. Per event: the worst of these ratios (NaN: not an optimizer event, or none).
std::vector<double> optimizer_input_ratios(const CompareResult& result, const Analysis& a) {
  std::map<std::tuple<int, int64_t, std::string_view>, double> grads;  // (rank, step, module) -> worst ratio
  std::map<std::pair<int, int64_t>, double> step_grads;
  for (const CompareRow& row : result.rows) {
    const Record& g = *row.golden;
    if (g.direction != "backward" || g.role != "grad" || std::isnan(row.noise_ratio)) continue;
    take_max(grads.try_emplace({g.rank, g.step, std::string_view(g.module)}, kNaN).first->second, row.noise_ratio);
    take_max(step_grads.try_emplace({g.rank, g.step}, kNaN).first->second, row.noise_ratio);
  }
  std::map<std::pair<int, int64_t>, double> global_out;                       // (rank, step) -> `<global>` output
  std::map<std::tuple<int, std::string_view, int64_t>, double> previous_out;  // (rank, event, step) -> output
  for (const EventError& e : a.events) {
    if (e.direction != "optimizer") continue;
    if (e.module == "<global>") global_out[{e.rank, e.step}] = e.output_ratio;
    previous_out[{e.rank, std::string_view(e.name), e.step}] = e.output_ratio;
  }
  std::vector<double> inputs(a.events.size(), kNaN);
  for (size_t k = 0; k < a.events.size(); ++k) {
    const EventError& e = a.events[k];
    if (e.direction != "optimizer") continue;
    const bool global = e.module == "<global>";
    if (global) {
      if (auto it = step_grads.find({e.rank, e.step}); it != step_grads.end()) take_max(inputs[k], it->second);
    } else {
      const std::string_view m(e.module);
      for (auto it = grads.lower_bound({e.rank, e.step, m}); it != grads.end(); ++it) {
        const auto& [rank, step, module] = it->first;
        if (rank != e.rank || step != e.step || !(module == m || (module.starts_with(m) && module[m.size()] == '.')))
          break;
        take_max(inputs[k], it->second);
      }
      if (auto it = global_out.find({e.rank, e.step}); it != global_out.end()) take_max(inputs[k], it->second);
    }
    auto it = previous_out.lower_bound({e.rank, std::string_view(e.name), e.step});
    if (it != previous_out.begin()) {
      --it;
      const auto& [rank, name, step] = it->first;
      if (rank == e.rank && name == std::string_view(e.name)) take_max(inputs[k], it->second);
    }
  }
  return inputs;
}

// No input recorded: the previous finished event of the same stream feeds it (a chain of ops).
void infer_missing_input(Analysis& a, size_t k) {
  EventError& e = a.events[k];
  for (size_t j = k; j-- > 0;) {
    const EventError& p = a.events[j];
    if (p.rank != e.rank || p.step != e.step || p.direction != e.direction) break;
    if (contains(p, e) || std::isnan(p.output_ratio)) continue;
    e.input_ratio = p.output_ratio;
    e.input_inferred = true;
    break;
  }
}

// The event's amplification A = out / max(in, 1) and its role. A source creates error: its output
// leaves the noise class and is either source_amplification times what its inputs bring, or comes from
// inputs within one rounding (in ≤ 1: the same inputs give an output beyond what one op's rounding
// explains, elevated or structural — issue 28 §7).
void judge_role(EventError& e, double in, const AnalysisOptions& options) {
  const double out = e.output_ratio;
  if (std::isnan(out)) {
    e.amplification = kNaN;
  } else if (std::isinf(out)) {
    e.amplification = std::isinf(in) ? kNaN : kInf;  // NaN/Inf born here, or carried in
  } else {
    e.amplification = out / std::max(in, 1.0);
  }
  const bool from_identical_inputs = in <= 1.0;
  if (std::isnan(out) || out <= options.noise.noise_max) {
    e.role = EventRole::kClean;
  } else if (std::isinf(e.amplification) || from_identical_inputs ||
             (!std::isnan(e.amplification) && e.amplification >= options.source_amplification)) {
    e.role = EventRole::kSource;
  } else {
    e.role = EventRole::kCarrier;
  }
}

// Local error of every event: sources, carriers, clean.
void assign_roles(const CompareResult& result, Analysis& a, const AnalysisOptions& options,
                  const RecordSource* golden, const RecordSource* target) {
  const std::vector<double> contained_params = contained_parameter_ratios(a);
  const std::vector<double> optimizer_inputs = optimizer_input_ratios(result, a);
  for (size_t k = 0; k < a.events.size(); ++k) {
    EventError& e = a.events[k];
    if (e.direction == "optimizer") {
      e.input_ratio = optimizer_inputs[k];  // never the previous event's output: no chain of ops feeds it
    } else if (std::isnan(e.input_ratio)) {
      infer_missing_input(a, k);
    }
    // Input error as it reaches the output: propagated through the op where its conditioning is known
    // (softmax, norms, exp/log), else taken at face value (docs/judgement.md "Conditioning").
    // Only an output beyond noise can make the event a source: the others need no propagation (and no
    // tensor reads).
    if (golden && target && e.output_ratio > options.noise.noise_max && std::isfinite(e.output_ratio))
      e.explained_ratio = explained_output_ratio(result, e, *golden, *target);
    double in = 0;
    take_max(in, std::isnan(e.explained_ratio) ? e.input_ratio : e.explained_ratio);
    take_max(in, e.param_ratio);
    take_max(in, contained_params[k]);
    judge_role(e, in, options);
  }
}

// A module whose error is created by an event it contains is explained by that event. Only events of
// one rank, step and direction can contain each other, and the events are sorted by those: each source
// is checked against the sources of its own stretch (a thousand-rank run would otherwise compare every
// source with every other).
void explain_by_children(Analysis& a, const AnalysisOptions& options) {
  const auto stretch = [](const EventError& e) { return std::make_tuple(e.rank, e.step, direction_rank(e.direction)); };
  for (size_t lo = 0, hi = 0; lo < a.events.size(); lo = hi) {
    while (hi < a.events.size() && stretch(a.events[hi]) == stretch(a.events[lo])) ++hi;
    std::vector<size_t> sources;
    for (size_t k = lo; k < hi; ++k)
      if (a.events[k].role == EventRole::kSource) sources.push_back(k);
    for (size_t o : sources) {
      EventError& outer = a.events[o];
      const double outer_score = log2_score(outer.amplification);
      for (size_t i : sources) {
        const EventError& inner = a.events[i];
        if (!contains(outer, inner)) continue;
        if (log2_score(inner.amplification) >= options.child_explains * outer_score) {
          outer.explained_by = inner.name;
          break;
        }
      }
    }
  }
}

// ---- suspects ---------------------------------------------------------------------------------------------

Suspect suspect_of(const EventError& e, SuspectKind kind, size_t idx, double score, std::string why) {
  Suspect s;
  s.kind = kind;
  s.event = idx;
  s.name = e.name;
  s.module = e.module;
  s.op = e.op;
  s.direction = e.direction;
  s.step = e.step;
  s.rank = e.rank;
  s.score = score;
  s.input_ratio = e.input_ratio;
  s.param_ratio = e.param_ratio;
  s.output_ratio = e.output_ratio;
  s.weak_evidence = e.statistics_only || e.aligned_only;
  s.why = std::move(why);
  return s;
}

// Inputs of the first forward event of each (rank, step); parameters at the first step of each rank.
void add_input_and_parameter_suspects(const Analysis& a, double noise_max, std::vector<Suspect>& suspects) {
  std::map<std::pair<int, int64_t>, size_t> first_forward;
  std::map<int, int64_t> first_step;
  for (size_t k = 0; k < a.events.size(); ++k) {
    const EventError& e = a.events[k];
    if (direction_rank(e.direction) == 0) first_forward.emplace(std::make_pair(e.rank, e.step), k);
    auto it = first_step.find(e.rank);
    if (it == first_step.end() || e.step < it->second) first_step[e.rank] = e.step;
  }
  for (const auto& [rs, k] : first_forward) {
    const EventError& e = a.events[k];
    if (!e.input_inferred && !std::isnan(e.input_ratio) && e.input_ratio > noise_max)
      suspects.push_back(suspect_of(e, SuspectKind::kInputs, k, log2_score(e.input_ratio),
                                    fmt::format("the model's inputs already differ ({}) before any computation",
                                                noise_ratio_text(e.input_ratio))));
  }
  for (size_t k = 0; k < a.events.size(); ++k) {
    const EventError& e = a.events[k];
    if (!std::isnan(e.param_ratio) && e.param_ratio > noise_max && e.step == first_step[e.rank] &&
        direction_rank(e.direction) == 0)
      suspects.push_back(suspect_of(e, SuspectKind::kParameters, k, log2_score(e.param_ratio),
                                    fmt::format("parameters differ ({}) before they are used",
                                                noise_ratio_text(e.param_ratio))));
  }
}

// Why a source is one, in words.
std::string source_why(const EventError& e) {
  const double in_ratio = std::isnan(e.input_ratio) ? 0.0 : std::max(0.0, e.input_ratio);
  if (std::isinf(e.amplification) && e.nonfinite_born)
    return fmt::format("NaN/Inf born here from inputs at {}", noise_ratio_text(in_ratio));
  if (std::isinf(e.amplification))
    return fmt::format("output differs where the golden's is all zero, from inputs at {}", noise_ratio_text(in_ratio));
  const char* inputs_are = e.input_inferred           ? " (previous event)"
                           : e.direction == "optimizer" ? " (its gradients, lr/clip and previous state)"
                                                        : "";
  return fmt::format("output {} from inputs {}{}{} (×{:.3g})", noise_ratio_text(e.output_ratio),
                     noise_ratio_text(e.input_ratio), inputs_are,
                     std::isnan(e.explained_ratio)
                         ? ""
                         : fmt::format(", which explain {} through the op", noise_ratio_text(e.explained_ratio)),
                     e.amplification);
}

// Sources no contained event explains.
void add_source_suspects(const Analysis& a, std::vector<Suspect>& suspects) {
  for (size_t k = 0; k < a.events.size(); ++k) {
    const EventError& e = a.events[k];
    if (e.role != EventRole::kSource || !e.explained_by.empty()) continue;
    suspects.push_back(suspect_of(e, SuspectKind::kSource, k, log2_score(e.amplification), source_why(e)));
  }
}

// Forward causes come before backward ones (backward errors follow from the forward pass when it
// already differs); inside a direction: differing inputs, then differing parameters in execution order
// (both present before any computation: upstream of everything), then sources by error created.
// An optimizer event that creates error at step s computes parameters that differ: every later step of its
// rank starts from them, so its suspects are downstream of it and rank after those of steps up to s. Per rank:
// the earliest such step (none: no optimizer source).
std::map<int, int64_t> first_optimizer_source_step(const std::vector<Suspect>& suspects) {
  std::map<int, int64_t> first;
  for (const Suspect& s : suspects) {
    if (s.kind != SuspectKind::kSource || s.direction != "optimizer") continue;
    auto [it, added] = first.try_emplace(s.rank, s.step);
    if (!added) it->second = std::min(it->second, s.step);
  }
  return first;
}

void rank_suspects(const Analysis& a, std::vector<Suspect>& suspects) {
  const std::map<int, int64_t> optimizer_source = first_optimizer_source_step(suspects);
  const auto downstream_of_optimizer = [&](const Suspect& s) {
    const auto it = optimizer_source.find(s.rank);
    return it != optimizer_source.end() && s.step > it->second;
  };
  const bool forward_has_suspect = std::any_of(suspects.begin(), suspects.end(), [](const Suspect& s) {
    return direction_rank(s.direction) == 0;
  });
  // Sources and one-sided ops both create error where they are: ranked together by score, and at equal
  // score the one-sided op first (it is upstream of the error its call creates).
  auto kind_rank = [](SuspectKind k) { return k == SuspectKind::kInputs ? 0 : k == SuspectKind::kParameters ? 1 : 2; };
  auto ranked_by_score = [](SuspectKind k) { return k == SuspectKind::kSource || k == SuspectKind::kStructure; };
  std::stable_sort(suspects.begin(), suspects.end(), [&](const Suspect& x, const Suspect& y) {
    if (downstream_of_optimizer(x) != downstream_of_optimizer(y)) return !downstream_of_optimizer(x);
    const int dx = forward_has_suspect ? direction_rank(x.direction) : 0;
    const int dy = forward_has_suspect ? direction_rank(y.direction) : 0;
    if (dx != dy) return dx < dy;
    if (kind_rank(x.kind) != kind_rank(y.kind)) return kind_rank(x.kind) < kind_rank(y.kind);
    // Weak evidence (statistics only, or pairs found only by order alignment) ranks below strong.
    if (x.weak_evidence != y.weak_evidence) return !x.weak_evidence;
    if (ranked_by_score(x.kind) && x.score != y.score) return x.score > y.score;
    if (x.kind != y.kind) return x.kind == SuspectKind::kStructure;
    return std::make_tuple(x.rank, x.step, a.events[x.event].first_order) <
           std::make_tuple(y.rank, y.step, a.events[y.event].first_order);
  });
}

}  // namespace

Analysis analyse(CompareResult& result, const AnalysisOptions& options, const RecordSource* golden,
                 const RecordSource* target) {
  Analysis a;
  ensure_classified(result, options);
  count_rows(result, a);
  a.first_divergence = first_divergence(result);
  a.has_events = has_capture_metadata(result);
  if (!a.has_events) return a;  // plain tensor files: no inputs/outputs to relate

  settle_events(a, group_rows_into_events(result, a), options);
  sort_events_by_stream(a);
  assign_roles(result, a, options, golden, target);
  explain_by_children(a, options);

  std::vector<Suspect> suspects;
  add_input_and_parameter_suspects(a, options.noise.noise_max, suspects);
  add_source_suspects(a, suspects);
  add_one_sided_op_suspects(result, a, suspects);
  rank_suspects(a, suspects);
  if (suspects.size() > options.max_suspects) suspects.resize(options.max_suspects);
  a.suspects = std::move(suspects);
  return a;
}

}  // namespace parity
