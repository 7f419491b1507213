// src/curves/output.cpp — machine-readable outputs of the curve and rank comparisons:
// parity.curve/1, parity.curve.csv/2, parity.ranks/1, parity.ranks.csv/2 (docs/curves.md, parity/schemas.h).
#include <cmath>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/csv_cell.h"
#include "parity/json_number.h"

#include "parity/curves.h"
#include "parity/schemas.h"

namespace parity::curves {

namespace {

using json = nlohmann::ordered_json;




}  // namespace

std::string curve_comparison_json(const CurveComparison& c, int indent) {
  json j;
  j["schema"] = schemas::kCurve.id;
  auto side = [&](const std::string& path, const std::string& format, bool golden) {
    json s;
    s["path"] = path;
    s["format"] = format;
    json m = json::array();
    for (const auto& mc : c.metrics) m.push_back(mc.metric);
    for (const auto& name : golden ? c.only_golden : c.only_target) m.push_back(name);
    s["metrics"] = m;
    return s;
  };
  j["golden"] = side(c.golden_path, c.golden_format, true);
  j["target"] = side(c.target_path, c.target_format, false);
  j["verdict"] = verdict_name(c.verdict);
  j["only_golden"] = c.only_golden;
  j["only_target"] = c.only_target;
  j["counters_skipped"] = c.counters_skipped;
  j["problems"] = json_problems<json>(c.problems);
  j["notes"] = c.notes;
  json metrics = json::array();
  for (const MetricComparison& m : c.metrics) {
    json o;
    o["metric"] = m.metric;
    o["verdict"] = verdict_name(m.verdict);
    o["reasons"] = m.reasons;
    o["tolerance"] = {{"rel_tol", m.tolerance.rel_tol}, {"consecutive", m.tolerance.consecutive},
                      {"final_tol", m.tolerance.final_tol}};
    o["aligned_steps"] = m.points.size();
    o["missing_in_golden"] = m.missing_in_golden;
    o["missing_in_target"] = m.missing_in_target;
    o["mean_rel_dev"] = json_number<json>(m.mean_rel_dev);
    o["max_rel_dev"] = json_number<json>(m.max_rel_dev);
    o["max_rel_dev_step"] = m.max_rel_dev_step >= 0 ? json(m.max_rel_dev_step) : json(nullptr);
    o["mean_abs_diff"] = json_number<json>(m.mean_abs_diff);
    o["max_abs_diff"] = json_number<json>(m.max_abs_diff);
    json windows = json::array();
    for (const Window& w : m.windows)
      windows.push_back({{"first_step", w.first_step}, {"last_step", w.last_step}, {"points", w.points},
                         {"mean_rel_dev", json_number<json>(w.mean_rel_dev)}, {"max_rel_dev", json_number<json>(w.max_rel_dev)}});
    o["windows"] = windows;
    o["divergence_step"] = m.divergence_step ? json(*m.divergence_step) : json(nullptr);
    o["deviation"] = {{"kind", m.deviation_kind},
                      {"steps_above_tol", m.steps_above_tol},
                      {"fraction_above_after_divergence", json_number<json>(m.fraction_above_after_divergence)},
                      {"spike_steps", m.spike_steps_above_tol}};
    o["nonfinite"] = {{"golden", m.nonfinite_golden}, {"target", m.nonfinite_target}};
    auto spikes = [](const std::vector<Spike>& v) {
      json a = json::array();
      for (const Spike& s : v)
        a.push_back({{"step", s.step}, {"value", json_number<json>(s.value)}, {"median", json_number<json>(s.median)},
                     {"threshold", json_number<json>(s.threshold)}});
      return a;
    };
    o["spikes"] = {{"golden", spikes(m.spikes_golden)}, {"target", spikes(m.spikes_target)}};
    o["final"] = {{"window", m.final_window}, {"golden", json_number<json>(m.final_golden)}, {"target", json_number<json>(m.final_target)},
                  {"abs_diff", json_number<json>(m.final_abs_diff)}, {"rel_diff", json_number<json>(m.final_rel_diff)}};
    o["best"] = {{"mode", m.best_mode},
                 {"golden", json_number<json>(m.best_golden)},
                 {"golden_step", m.best_golden_step >= 0 ? json(m.best_golden_step) : json(nullptr)},
                 {"target", json_number<json>(m.best_target)},
                 {"target_step", m.best_target_step >= 0 ? json(m.best_target_step) : json(nullptr)},
                 {"abs_diff", json_number<json>(m.best_abs_diff)},
                 {"rel_diff", json_number<json>(m.best_rel_diff)}};
    o["area"] = {{"between", json_number<json>(m.area_between)}, {"golden", json_number<json>(m.area_golden)}, {"relative", json_number<json>(m.rel_area)}};
    o["trend"] = {{"golden_slope", json_number<json>(m.slope_golden)}, {"target_slope", json_number<json>(m.slope_target)},
                  {"consistent", m.trend_consistent}};
    json points = json::array();
    for (const AlignedPoint& p : m.points)
      points.push_back({{"step", p.step}, {"golden", json_number<json>(p.golden)}, {"target", json_number<json>(p.target)},
                        {"abs_diff", json_number<json>(p.abs_diff)}, {"rel_dev", json_number<json>(p.rel_dev)}});
    o["points"] = points;
    metrics.push_back(o);
  }
  j["metrics"] = metrics;
  return json_text(j, indent);
}

std::string curve_comparison_csv(const CurveComparison& c) {
  std::ostringstream out;
  const char* const kSchema = schemas::kCurveCsv.id;
  out << csv_header("metric,step,golden,target,abs_diff,rel_dev,flags");
  for (const MetricComparison& m : c.metrics) {
    std::set<int64_t> sg, st;
    for (const auto& s : m.spikes_golden) sg.insert(s.step);
    for (const auto& s : m.spikes_target) st.insert(s.step);
    for (const AlignedPoint& p : m.points) {
      std::vector<std::string> flags;
      if (sg.count(p.step)) flags.push_back("spike_golden");
      if (st.count(p.step)) flags.push_back("spike_target");
      if (!std::isfinite(p.golden)) flags.push_back("nonfinite_golden");
      if (!std::isfinite(p.target)) flags.push_back("nonfinite_target");
      if (p.rel_dev > m.tolerance.rel_tol) flags.push_back("above_tol");
      if (m.divergence_step && p.step >= *m.divergence_step) flags.push_back("diverged");
      out << fmt::format("{},{},{},{},{},{},{},{}\n", kSchema, csv_escape(m.metric), p.step, csv_number(p.golden), csv_number(p.target),
                         csv_number(p.abs_diff), csv_number(p.rel_dev), fmt::join(flags, ";"));
    }
    for (int64_t s : m.missing_in_golden) out << fmt::format("{},{},{},,,,,missing_golden\n", kSchema, csv_escape(m.metric), s);
    for (int64_t s : m.missing_in_target) out << fmt::format("{},{},{},,,,,missing_target\n", kSchema, csv_escape(m.metric), s);
  }
  return out.str();
}

std::string rank_comparison_json(const RankComparison& c, int indent) {
  json j;
  j["schema"] = schemas::kRanks.id;
  std::set<int> ranks;
  for (const auto& m : c.metrics) ranks.insert(m.ranks.begin(), m.ranks.end());
  j["run"] = {{"path", c.path}, {"format", c.format}, {"ranks", std::vector<int>(ranks.begin(), ranks.end())}};
  j["verdict"] = verdict_name(c.verdict);
  j["code"] = c.rank_inconsistent ? json("RANK_INCONSISTENT") : json(nullptr);
  j["problems"] = json_problems<json>(c.problems);
  j["notes"] = c.notes;
  json metrics = json::array();
  for (const RankMetricResult& m : c.metrics) {
    json o;
    o["metric"] = m.metric;
    o["ranks"] = m.ranks;
    o["steps_compared"] = m.steps_compared;
    o["rel_tol"] = c.rel_tol;
    o["consecutive"] = c.consecutive;
    o["verdict"] = verdict_name(m.verdict);
    json inc = json::array();
    for (const RankDeviation& d : m.inconsistent)
      inc.push_back({{"rank", d.rank}, {"from_step", d.from_step}, {"steps", d.steps},
                     {"max_rel_dev", json_number<json>(d.max_rel_dev)}, {"max_rel_dev_step", d.max_rel_dev_step}});
    o["inconsistent"] = inc;
    json missing = json::object();
    for (const auto& [rank, steps] : m.missing_steps) missing[std::to_string(rank)] = steps;
    o["missing_steps"] = missing;
    metrics.push_back(o);
  }
  j["metrics"] = metrics;
  return json_text(j, indent);
}

std::string rank_comparison_csv(const RankComparison& c) {
  std::ostringstream out;
  out << csv_header("metric,rank,from_step,steps,max_rel_dev,max_rel_dev_step");
  for (const auto& m : c.metrics)
    for (const auto& d : m.inconsistent)
      out << fmt::format("{},{},{},{},{},{},{}\n", schemas::kRanksCsv.id, csv_escape(m.metric), d.rank, d.from_step, d.steps, csv_number(d.max_rel_dev),
                         d.max_rel_dev_step);
  return out.str();
}

}  // namespace parity::curves
