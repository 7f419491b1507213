// divergence_timeline: where two long runs part beyond the rounding noise that accumulates over the steps, and
// what the evidence says caused it (parity/analysis.h; formula and causes: docs/timeline.md).
//
// A row's noise ratio is its error in units of one step's expected rounding (classify_rows). Over steps a
// healthy pair of runs does not stay within one step's rounding: each step starts from the state (parameters,
// moments) the earlier steps computed, so their independent roundings add up, and a sum of k independent
// zero-mean errors grows as sqrt(k). A tensor's ratio at step k is therefore held against
// structural_min · sqrt(k − k0 + 1), k0 the rank's first compared step: at k0 the bound is the per-step
// verdict's own limit, later it widens as accumulated rounding does. The fitted growth exponent of every
// tensor (TimelineTensor::growth) is the check of the sqrt(k) model on a healthy run (docs/timeline.md).
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis/event_index.h"
#include "fmt/format.h"
#include "parity/analysis.h"

namespace parity {
namespace {

using analysis_detail::direction_rank;

constexpr const char* kPhases[] = {"forward", "backward", "gradient", "clipping",
                                   "lr",      "optimizer_state", "update", "parameter"};

// The phase of a training step a record belongs to (an index into kPhases).
int phase_of(const Record& r) {
  if (r.direction == "backward") return r.role == "grad" ? 2 : 1;
  if (r.direction == "optimizer") {
    if (r.role == "grad_norm" || r.role == "clip_factor") return 3;
    if (r.role == "lr") return 4;
    return r.role == "update" ? 6 : 5;
  }
  return r.role == "parameter" || r.role == "parameters" ? 7 : 0;
}

// Least-squares sums of log(ratio) over log(steps) for one tensor.
struct GrowthFit {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  void add(double steps, double ratio) {
    if (!(ratio > 0) || !std::isfinite(ratio)) return;
    const double x = std::log(steps), y = std::log(ratio);
    n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  double slope() const {
    const double d = n * sxx - sx * sx;
    return n >= 3 && d > 0 ? (n * sxy - sx * sy) / d : kNaN;
  }
};

// Ratios far beyond the bound differ in their fourth digit only by noise: the JSON keeps four.
double four_digits(double v) { return std::isfinite(v) && v != 0 ? std::stod(fmt::format("{:.4g}", v)) : v; }

struct TensorState {
  TimelineTensor tensor;
  GrowthFit fit;
  std::optional<TimelineCrossing> crossing;
};

// The pass over the rows: every tensor's series and the module curves.
class TimelineBuilder {
 public:
  TimelineBuilder(const CompareResult& result, double limit) : result_(result), limit_(limit) {
    std::map<int64_t, size_t> steps;
    for (const CompareRow& row : result.rows) {
      steps.emplace(row.golden->step, 0);
      auto [it, added] = first_step_.try_emplace(row.golden->rank, row.golden->step);
      if (!added) it->second = std::min(it->second, row.golden->step);
    }
    for (auto& [step, index] : steps) {
      index = t_.steps.size();
      t_.steps.push_back(step);
    }
    step_index_ = std::move(steps);
    t_.per_step_limit = limit;
  }

  bool spans_steps() const { return t_.steps.size() >= 2; }

  void add(size_t i) {
    const CompareRow& row = result_.rows[i];
    const Record& g = *row.golden;
    if (std::isnan(row.noise_ratio)) return;
    const double steps = static_cast<double>(g.step - first_step_[g.rank] + 1);
    const double bound = limit_ * std::sqrt(steps);
    const double of_bound = std::isinf(row.noise_ratio) ? row.noise_ratio : row.noise_ratio / bound;
    auto [it, added] = tensor_of_.try_emplace({g.rank, std::string_view(g.name)}, tensors_.size());
    if (added) {
      tensors_.emplace_back();
      tensors_.back().tensor.name = g.name;
      tensors_.back().tensor.phase = kPhases[phase_of(g)];
      tensors_.back().tensor.rank = g.rank;
    }
    TensorState& s = tensors_[it->second];
    s.tensor.steps += 1;
    s.fit.add(steps, row.noise_ratio);
    if (of_bound > s.tensor.worst_of_bound) s.tensor.worst_of_bound = of_bound, s.tensor.worst_step = g.step;
    if (row.noise_ratio > bound && !s.crossing) s.crossing = crossing_of(i, bound);
    add_to_module(g, of_bound);
  }

  DivergenceTimeline finish() {
    std::vector<double> growths;
    for (TensorState& s : tensors_) {
      s.tensor.growth = s.fit.slope();
      if (!std::isnan(s.tensor.growth)) growths.push_back(s.tensor.growth);
      if (s.crossing) s.tensor.first_crossing = s.crossing->step;
      s.tensor.worst_of_bound = four_digits(s.tensor.worst_of_bound);
      if (s.tensor.steps >= 2) t_.tensors.push_back(s.tensor);
    }
    if (!growths.empty()) {
      std::nth_element(growths.begin(), growths.begin() + growths.size() / 2, growths.end());
      t_.median_growth = growths[growths.size() / 2];
    }
    take_first_crossings();
    for (auto& [key, m] : modules_) t_.modules.push_back(std::move(m));
    return std::move(t_);
  }

 private:
  TimelineCrossing crossing_of(size_t i, double bound) const {
    const Record& g = *result_.rows[i].golden;
    TimelineCrossing c;
    c.name = g.name;
    c.module = g.module;
    c.phase = kPhases[phase_of(g)];
    c.role = g.role;
    c.step = g.step;
    c.rank = g.rank;
    c.row = i;
    c.ratio = result_.rows[i].noise_ratio;
    c.bound = bound;
    return c;
  }

  void add_to_module(const Record& g, double of_bound) {
    auto [it, added] = modules_.try_emplace({g.rank, std::string_view(g.module)});
    TimelineModule& m = it->second;
    if (added) {
      m.module = g.module;
      m.rank = g.rank;
      m.of_bound.assign(t_.steps.size(), kNaN);
    }
    double& v = m.of_bound[step_index_.at(g.step)];
    if (std::isnan(v) || of_bound > v) v = four_digits(of_bound);
    if (of_bound > 1 && (m.first_crossing < 0 || g.step < m.first_crossing)) m.first_crossing = g.step;
  }

  // In step order, then the order a step computes in (forward, backward, optimizer), then rank.
  static auto order_key(const CompareResult& result, const TimelineCrossing& c) {
    const Record& g = *result.rows[c.row].golden;
    return std::make_tuple(c.step, direction_rank(g.direction), g.order, c.rank);
  }

  void take_first_crossings() {
    std::vector<std::optional<TimelineCrossing>> per_phase(std::size(kPhases));
    for (const TensorState& s : tensors_) {
      if (!s.crossing) continue;
      const auto better = [&](const std::optional<TimelineCrossing>& cur) {
        return !cur || order_key(result_, *s.crossing) < order_key(result_, *cur);
      };
      if (better(t_.first)) t_.first = s.crossing;
      const size_t p = std::find(std::begin(kPhases), std::end(kPhases), s.crossing->phase) - std::begin(kPhases);
      if (better(per_phase[p])) per_phase[p] = s.crossing;
    }
    for (auto& c : per_phase)
      if (c) t_.phase_first.push_back(std::move(*c));
  }

  const CompareResult& result_;
  double limit_;
  DivergenceTimeline t_;
  std::map<int, int64_t> first_step_;
  std::map<int64_t, size_t> step_index_;
  std::map<std::pair<int, std::string_view>, size_t> tensor_of_;
  std::vector<TensorState> tensors_;
  std::map<std::pair<int, std::string_view>, TimelineModule> modules_;
};

const TimelineCrossing* phase_crossing(const DivergenceTimeline& t, std::string_view phase) {
  for (const TimelineCrossing& c : t.phase_first)
    if (c.phase == phase) return &c;
  return nullptr;
}

// The first step at which a tensor whose name holds `part` crosses (-1: none does).
int64_t first_crossing_of(const DivergenceTimeline& t, std::string_view part) {
  int64_t first = -1;
  for (const TimelineTensor& x : t.tensors)
    if (x.first_crossing >= 0 && x.name.find(part) != std::string::npos && (first < 0 || x.first_crossing < first))
      first = x.first_crossing;
  return first;
}

std::string step_text(int64_t step) { return step < 0 ? "never" : fmt::format("at step {}", step); }

// The configuration differences that bear on a cause: keys with any of the prefixes.
std::vector<std::string> keys_with(const std::vector<ConfigDifference>& config,
                                   std::initializer_list<std::string_view> prefixes) {
  std::vector<std::string> keys;
  for (const ConfigDifference& d : config)
    for (std::string_view p : prefixes)
      if (d.numeric && std::string_view(d.key).starts_with(p)) {
        keys.push_back(d.key);
        break;
      }
  return keys;
}

// What the evidence names as the cause of the first crossing (docs/timeline.md "Causes").
void name_cause(DivergenceTimeline& t, const std::vector<ConfigDifference>& config) {
  if (!t.first) return;
  const TimelineCrossing& c = *t.first;
  const TimelineCrossing* grads = phase_crossing(t, "gradient");
  const int64_t grad_step = grads ? grads->step : -1;
  const bool grads_agree = grad_step < 0 || grad_step > c.step;
  const int64_t norm_step = first_crossing_of(t, "/optimizer/grad_norm/");
  if (c.phase == "lr") {
    t.cause = "config";
    t.cause_text = fmt::format("the learning rate differs from step {} ({}): the schedule or the lr setting", c.step, c.name);
    t.config_keys = keys_with(config, {"optimizer."});
  } else if (c.phase == "clipping" && norm_step == c.step && grads_agree) {
    t.cause = "reduction";
    t.cause_text = fmt::format(
        "the total gradient norm the clipping used differs at step {} while the parameter gradients as recorded "
        "agree (they cross {}): the gradients change between backward and clipping (an all-reduce, a loss scale "
        "unscaled after clipping)", c.step, step_text(grad_step));
  } else if (c.phase == "clipping" && grads_agree) {
    t.cause = "config";
    t.cause_text = fmt::format("the clip factor differs at step {} while the total norm agrees: max_norm differs", c.step);
  } else if ((c.phase == "optimizer_state" || c.phase == "update") && grads_agree) {
    t.cause = "optimizer";
    t.cause_text = fmt::format("the optimizer's {} diverges at step {} ({}) before the gradients do (they cross {})",
                               c.role, c.step, c.name, step_text(grad_step));
    t.config_keys = keys_with(config, {"optimizer.", "model.parameter_dtypes"});
  } else {
    t.cause = c.phase == "optimizer_state" || c.phase == "update" || c.phase == "clipping" ? "gradient" : c.phase;
    t.cause_text = fmt::format("the {} diverges first, at step {} ({}): the model's computation (see the suspects)",
                               t.cause, c.step, c.name);
    t.config_keys = keys_with(config, {"precision", "torch.backends", "model.parameter_dtypes"});
  }
}

}  // namespace

std::optional<DivergenceTimeline> divergence_timeline(const CompareResult& result,
                                                      const std::vector<ConfigDifference>& config,
                                                      const AnalysisOptions& options) {
  TimelineBuilder builder(result, options.noise.structural_min);
  if (!builder.spans_steps()) return std::nullopt;
  for (size_t i : rows_in_execution_order(result.rows)) builder.add(i);
  DivergenceTimeline t = builder.finish();
  name_cause(t, config);
  return t;
}

}  // namespace parity
