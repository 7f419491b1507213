// `parity monitor RUN` (parity/monitor.h, docs/monitor.md): anomalies of one run without a golden.
#include "parity/monitor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "parity/analysis.h"
#include "parity/curves.h"
#include "parity/json_number.h"
#include "parity/open_source.h"
#include "parity/schemas.h"
#include "parity/tensor.h"

namespace parity::monitor {
namespace {

using nlohmann::json;

// One tensor's anomaly, kept once: the first step it is seen, counting the steps that show it.
class AnomalySet {
 public:
  void add(const std::string& code, const std::string& tensor, int rank, int64_t step, const std::string& evidence) {
    auto [it, fresh] = index_.emplace(std::make_tuple(code, tensor, rank), out_.size());
    if (fresh) out_.push_back({code, step, rank, tensor, 1, evidence});
    else ++out_[it->second].steps;
  }
  std::vector<Anomaly> take() {
    std::stable_sort(out_.begin(), out_.end(), [](const Anomaly& a, const Anomaly& b) { return std::tie(a.step, a.code) < std::tie(b.step, b.code); });
    return std::move(out_);
  }

 private:
  std::map<std::tuple<std::string, std::string, int>, size_t> index_;
  std::vector<Anomaly> out_;
};

// ---- logged scalars ---------------------------------------------------------------------------------

void scalar_spikes(const curves::CurveRun& run, const MonitorOptions& o, AnomalySet& out) {
  for (const curves::Series& s : run.series) {
    const char* code = s.metric == "loss" ? "LOSS_SPIKE" : s.metric == "grad_norm" ? "GRAD_NORM_SPIKE" : nullptr;
    if (code == nullptr) continue;
    for (const curves::Spike& sp : curves::find_spikes(s.steps, s.values, o.spike_window, o.spike_k)) {
      if (!(sp.value > (1 + o.spike_rel) * sp.median)) continue;
      out.add(code, s.metric, s.rank, sp.step,
              fmt::format("{} {:.4g} at step {} > {:.4g} (trailing median {:.4g} + {:g} robust deviations) and {:.0f} % above the "
                          "median", s.metric, sp.value, sp.step, sp.threshold, sp.median, o.spike_k, 100 * (sp.value / sp.median - 1)));
    }
  }
}

// Only what a data-parallel step makes equal on every rank: the gradient norm after the all-reduce, the
// learning rate, the loss scale. Each rank's loss is its own batch's.
void rank_disagreement(const curves::CurveRun& run, AnomalySet& out) {
  if (run.ranks().size() < 2) return;
  curves::RankOptions ro;
  for (const std::string& m : run.metrics())
    if (m == "grad_norm" || m == "lr" || m == "loss_scale") ro.metrics.push_back(m);
  if (ro.metrics.empty()) return;
  auto ranks = curves::compare_ranks(run, ro);
  if (!ranks.ok()) return;
  for (const curves::RankMetricResult& m : ranks->metrics)
    for (const curves::RankDeviation& d : m.inconsistent)
      out.add("RANK_INCONSISTENT", m.metric, d.rank, d.from_step,
              fmt::format("rank {} logs {} differently from the other ranks on {} steps from step {} (largest relative deviation {:.3g}; "
                          "parity ranks)", d.rank, m.metric, d.steps, d.from_step, d.max_rel_dev));
}

// ---- optimizer records ------------------------------------------------------------------------------

// What one (rank, step) holds of a parameter: its value's norm before the step, its update, its states.
struct ParamStep {
  const TensorStats* weight = nullptr;
  const TensorStats* update = nullptr;
  std::map<std::string, const TensorStats*> states;
  DType dtype = DType::kF32;
};
using Steps = std::map<std::tuple<std::string, int, int64_t>, ParamStep>;  // (module/param, rank, step)

// "<module>/optimizer/<role>/<param>[#k]" and "<module>/forward/parameter/<param>": (module/param, role).
bool parameter_key(const Record& r, std::string& key, std::string& role) {
  const std::string_view dir = r.direction;
  if (dir != "optimizer" && !(dir == "forward" && std::string_view(r.role) == "parameter")) return false;
  const std::string_view name = r.name;
  const size_t last = name.rfind('/');
  if (last == std::string_view::npos || std::string_view(r.module).empty()) return false;
  std::string_view param = name.substr(last + 1);
  param = param.substr(0, param.find('#'));
  key = std::string(r.module) + "/" + std::string(param);
  role = r.role;
  return true;
}

Steps parameter_steps(const RecordList& records, std::map<std::pair<int, int64_t>, double>& lr) {
  Steps steps;
  for (const Record& r : records) {
    if (!r.stats) continue;
    if (std::string_view(r.direction) == "optimizer" && std::string_view(r.role) == "lr") {
      lr[{r.rank, r.step}] = std::max(lr[{r.rank, r.step}], r.stats->max);
      continue;
    }
    std::string key, role;
    if (!parameter_key(r, key, role)) continue;
    ParamStep& p = steps[{key, r.rank, r.step}];
    if (role == "parameter") p.weight = &*r.stats, p.dtype = r.dtype;
    else if (role == "update") p.update = &*r.stats;
    else if (role != "grad_norm" && role != "clip_factor" && r.stats->numel > 1) p.states[role] = &*r.stats;
  }
  return steps;
}

void update_checks(const std::string& tensor, int rank, int64_t step, const ParamStep& p, double lr, const MonitorOptions& o,
                   AnomalySet& out) {
  if (p.update == nullptr || !(lr > 0)) return;
  const TensorStats& u = *p.update;
  if (u.numel > 0 && static_cast<double>(u.zero_count) > o.stagnant_fraction * static_cast<double>(u.numel))
    out.add("STAGNATION", tensor, rank, step,
            fmt::format("{} of {} elements did not move at step {} with lr {:.3g}{}", u.zero_count, u.numel, step, lr,
                        p.dtype == DType::kBF16 || p.dtype == DType::kF16
                            ? fmt::format(" (weights in {}: updates below half an ulp are lost)", dtype_name(p.dtype))
                            : ""));
  if (p.weight == nullptr || !(p.weight->l2norm > 0) || !std::isfinite(u.l2norm)) return;
  const double ratio = u.l2norm / p.weight->l2norm;
  if (ratio > o.ratio_high)
    out.add("UPDATE_RATIO_HIGH", tensor, rank, step,
            fmt::format("|update| / |weight| = {:.3g} at step {} > {:g}", ratio, step, o.ratio_high));
  else if (ratio < o.ratio_low && u.l2norm > 0)
    out.add("UPDATE_RATIO_LOW", tensor, rank, step,
            fmt::format("|update| / |weight| = {:.3g} at step {} < {:g}", ratio, step, o.ratio_low));
}

void moment_checks(const Steps& steps, const MonitorOptions& o, AnomalySet& out) {
  std::map<std::tuple<std::string, int, std::string>, double> last;  // (tensor, rank, state) -> previous norm
  for (const auto& [key, p] : steps) {
    const auto& [tensor, rank, step] = key;
    for (const auto& [state, s] : p.states) {
      const std::string name = tensor + "/" + state;
      double& prev = last.try_emplace({tensor, rank, state}, kNaN).first->second;
      if (prev > 0 && std::isfinite(s->l2norm) && s->l2norm > o.moment_jump * prev)
        out.add("MOMENT_EXPLODES", name, rank, step,
                fmt::format("|{}| grew {:.3g}x in one step ({:.3g} -> {:.3g}) at step {}", state, s->l2norm / prev, prev, s->l2norm, step));
      else if (prev > 0 && s->l2norm == 0)
        out.add("MOMENT_VANISHES", name, rank, step, fmt::format("|{}| fell from {:.3g} to 0 at step {}", state, prev, step));
      prev = s->l2norm;
    }
  }
}

void optimizer_checks(const RecordList& records, const MonitorOptions& o, AnomalySet& out) {
  std::map<std::pair<int, int64_t>, double> lr;
  const Steps steps = parameter_steps(records, lr);
  for (const auto& [key, p] : steps) {
    const auto& [tensor, rank, step] = key;
    const auto it = lr.find({rank, step});
    update_checks(tensor, rank, step, p, it == lr.end() ? kNaN : it->second, o, out);
  }
  moment_checks(steps, o, out);
}

void nonfinite_births(const RecordSource& src, AnomalySet& out) {
  OverflowOptions oo;
  oo.load_missing_stats = false;  // what the run recorded; a statistics run holds no tensors to read
  const OverflowReport r = analyse_overflow(src, oo);
  for (const NanOrigin& o : r.origins)
    out.add("NAN_INF", o.event, o.rank, o.step,
            fmt::format("NaN/Inf born at {} ({} {}, step {}){}", o.event, o.op, o.direction, o.step,
                        o.explanation.empty() ? "" : ": " + o.explanation));
}

int64_t count_steps(const RecordList& records) {
  int64_t last = -1;
  for (const Record& r : records) last = std::max(last, r.step);
  return last + 1;
}

}  // namespace

Result<MonitorReport> monitor_run(const std::filesystem::path& run, const MonitorOptions& options) {
  PARITY_ASSIGN_OR_RETURN(std::unique_ptr<RecordSource> src, open_source(run));
  MonitorReport report;
  report.run = run.string();
  report.problems = src->problems();
  report.records = static_cast<int64_t>(src->records().size());
  report.steps = count_steps(src->records());
  AnomalySet found;
  if (auto curves_run = curves::read_curves(run); curves_run.ok()) {
    report.scalars = curves_run->metrics();
    scalar_spikes(*curves_run, options, found);
    rank_disagreement(*curves_run, found);
    for (const Status& p : curves_run->problems) report.problems.push_back(p);
  }
  optimizer_checks(src->records(), options, found);
  nonfinite_births(*src, found);
  report.anomalies = found.take();
  return report;
}

bool monitor_found_trouble(const MonitorReport& report) { return !report.anomalies.empty() || !report.problems.empty(); }

std::string monitor_json(const MonitorReport& report, int indent) {
  json anomalies = json::array();
  for (const Anomaly& a : report.anomalies)
    anomalies.push_back({{"code", a.code}, {"step", a.step}, {"rank", a.rank}, {"tensor", a.tensor}, {"steps", a.steps}, {"evidence", a.evidence}});
  json problems = json::array();
  for (const Status& p : report.problems) problems.push_back(p.message());
  const json j = {{"schema", schemas::kMonitor.id}, {"run", report.run}, {"records", report.records}, {"steps", report.steps},
                  {"scalars", report.scalars}, {"verdict", monitor_found_trouble(report) ? "fail" : "pass"},
                  {"anomalies", std::move(anomalies)}, {"problems", std::move(problems)}};
  return j.dump(indent);
}

std::string monitor_text(const MonitorReport& report, bool color) {
  const auto bold = [&](const std::string& s) { return color ? "\033[1m" + s + "\033[0m" : s; };
  std::string out = fmt::format("{} {} records, {} steps; scalars: {}\n", bold("monitor:"), report.records, report.steps,
                                report.scalars.empty() ? "none logged" : fmt::format("{}", fmt::join(report.scalars, ", ")));
  for (const Anomaly& a : report.anomalies)
    out += fmt::format("  {:<18} step {:>4}{}  {}{}\n      {}\n", a.code, a.step, a.rank >= 0 ? fmt::format(" rank {}", a.rank) : "", a.tensor,
                       a.steps > 1 ? fmt::format(" ({} steps)", a.steps) : "", a.evidence);
  for (const Status& p : report.problems) out += "  problem: " + p.message() + "\n";
  out += fmt::format("{} | {} anomalies, {} problems | parity monitor {}\n", monitor_found_trouble(report) ? "TROUBLE" : "QUIET",
                     report.anomalies.size(), report.problems.size(), report.run);
  return out;
}

}  // namespace parity::monitor
