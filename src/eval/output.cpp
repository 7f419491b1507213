// src/eval/output.cpp — machine-readable outputs of the eval commands: parity.eval.ppl/1,
// parity.eval.mc/2, parity.eval.lmeval/2 and their CSV forms (docs/eval.md, parity/schemas.h).
#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/csv_cell.h"
#include "parity/json_number.h"

#include "parity/eval.h"
#include "parity/schemas.h"

namespace parity::eval {

namespace {

using json = nlohmann::ordered_json;



json vu(const ValueUnc& v) { return {{"value", json_number<json>(v.value)}, {"unc", json_number<json>(v.unc)}}; }

json pct(const Percentiles& p, bool quartiles) {
  json j;
  j["max"] = json_number<json>(p.max);
  j["p99_9"] = json_number<json>(p.p99_9);
  j["p99"] = json_number<json>(p.p99);
  j["p95"] = json_number<json>(p.p95);
  j["p90"] = json_number<json>(p.p90);
  if (quartiles) j["p75"] = json_number<json>(p.p75);
  j["median"] = json_number<json>(p.median);
  if (quartiles) j["p25"] = json_number<json>(p.p25);
  j["p10"] = json_number<json>(p.p10);
  j["p5"] = json_number<json>(p.p5);
  j["p1"] = json_number<json>(p.p1);
  j["p0_1"] = json_number<json>(p.p0_1);
  j["min"] = json_number<json>(p.min);
  return j;
}


json paired_json(const PairedAccuracy& a) {
  json j;
  j["group"] = a.group;
  j["questions"] = a.questions;
  j["golden_acc"] = json_number<json>(a.golden_acc);
  j["target_acc"] = json_number<json>(a.target_acc);
  j["diff"] = json_number<json>(a.diff);
  j["golden_stderr"] = json_number<json>(a.golden_stderr);
  j["target_stderr"] = json_number<json>(a.target_stderr);
  j["agreement"] = json_number<json>(a.agreement);
  j["mcnemar"] = {{"both_correct", a.mcnemar.both_correct}, {"only_golden", a.mcnemar.only_golden},
                  {"only_target", a.mcnemar.only_target},   {"both_wrong", a.mcnemar.both_wrong},
                  {"p_value", json_number<json>(a.mcnemar.p_value)}};
  j["bootstrap"] = {{"low", json_number<json>(a.bootstrap.low)}, {"high", json_number<json>(a.bootstrap.high)}, {"level", a.bootstrap.level},
                    {"samples", a.bootstrap.samples}, {"seed", a.bootstrap.seed}};
  j["distinguishable"] = a.distinguishable;
  j["verdict"] = verdict_name(a.verdict);
  return j;
}

// {"count", "list"}: every flip (the terminal lists a few). `a_b`: lm-eval's sides are runs A and B.
json flips_json(const std::vector<AnswerFlip>& flips, bool a_b) {
  json list = json::array();
  for (const AnswerFlip& f : flips) {
    std::string correct = flip_correct_name(f);
    if (a_b && correct == "golden") correct = "a";
    if (a_b && correct == "target") correct = "b";
    json o;
    o[a_b ? "doc_id" : "id"] = f.id;
    if (!a_b) o["subject"] = f.subject;
    o[a_b ? "a" : "golden"] = f.golden;
    o[a_b ? "b" : "target"] = f.target;
    o["answer"] = f.answer;
    o["correct"] = correct;
    list.push_back(std::move(o));
  }
  return {{"count", flips.size()}, {"list", std::move(list)}};
}

json thresholds_json(const AccuracyThresholds& t) {
  return {{"pass_points", t.pass_points}, {"fail_points", t.fail_points}, {"alpha", t.alpha}};
}

}  // namespace

std::string ppl_json(const PplResult& r, int indent) {
  json j;
  j["schema"] = schemas::kEvalPpl.id;
  j["golden"] = {{"source", r.golden_source}, {"representation", json::parse(r.golden_representation)}};
  j["target"] = {{"source", r.target_source}, {"representation", json::parse(r.target_representation)}};
  j["tokens"] = r.tokens;
  j["ppl"] = {{"golden", vu(r.ppl_golden)}, {"target", vu(r.ppl_target)}};
  j["ln_ppl_ratio"] = vu(r.ln_ppl_ratio);
  j["ppl_ratio"] = vu(r.ppl_ratio);
  j["ppl_diff"] = vu(r.ppl_diff);
  j["ln_ppl_correlation"] = json_number<json>(r.ln_ppl_correlation);
  j["kld"] = {{"mean", json_number<json>(r.kld.value)},
              {"unc", json_number<json>(r.kld.unc)},
              {"error_bound_mean", json_number<json>(r.kld_bound_mean)},
              {"error_bound_max", json_number<json>(r.kld_bound_max)},
              {"percentiles", pct(r.kld_pct, false)}};
  j["delta_p"] = {{"mean", json_number<json>(r.delta_p.value)}, {"unc", json_number<json>(r.delta_p.unc)}, {"rms", json_number<json>(r.delta_p_rms.value)},
                  {"rms_unc", json_number<json>(r.delta_p_rms.unc)}, {"percentiles", pct(r.delta_p_pct, true)}};
  j["same_top"] = vu(r.same_top);
  j["thresholds"] = {{"ppl_rel", r.thresholds.ppl_rel},
                     {"ppl_diff", std::isnan(r.thresholds.ppl_diff) ? json(nullptr) : json(r.thresholds.ppl_diff)},
                     {"kld", r.thresholds.kld}, {"kld_dtype", r.thresholds.kld_dtype},
                     {"kld_source", r.thresholds.kld_source}};
  json checks = json::array();
  for (const Check& c : r.checks)
    checks.push_back({{"name", c.name}, {"value", json_number<json>(c.value)}, {"limit", json_number<json>(c.limit)}, {"pass", c.pass}});
  j["checks"] = checks;
  j["verdict"] = verdict_name(r.verdict);
  j["notes"] = r.notes;
  j["problems"] = json_problems<json>(r.problems);
  return json_text(j, indent);
}

std::string ppl_tokens_csv(const PplResult& r) {
  std::ostringstream out;
  out << csv_header("token,nll_golden,nll_target,kld,kld_bound,delta_p,same_top");
  for (size_t i = 0; i < r.per_token.size(); ++i) {
    const TokenComparison& t = r.per_token[i];
    out << fmt::format("{},{},{},{},{},{},{},{}\n", schemas::kEvalPplCsv.id, i, csv_number(t.nll_golden), csv_number(t.nll_target), csv_number(t.kld),
                       csv_number(t.kld_bound), csv_number(t.delta_p), t.same_top ? 1 : 0);
  }
  return out.str();
}

std::string mc_json(const McResult& r, int indent) {
  json j;
  j["schema"] = schemas::kEvalMc.id;
  j["golden"] = {{"source", r.golden_source}};
  j["target"] = {{"source", r.target_source}};
  j["length_normalised"] = r.length_normalised;
  j["thresholds"] = thresholds_json(r.thresholds);
  j["verdict"] = verdict_name(r.verdict);
  j["overall"] = paired_json(r.overall);
  json subjects = json::array();
  for (const auto& s : r.subjects) subjects.push_back(paired_json(s));
  j["subjects"] = subjects;
  j["unmatched"] = r.unmatched;
  j["flips"] = flips_json(r.flips, false);
  j["problems"] = json_problems<json>(r.problems);
  return json_text(j, indent);
}

std::string mc_csv(const McResult& r) {
  std::ostringstream out;
  out << csv_header("group,questions,golden_acc,target_acc,diff,mcnemar_p,ci_low,ci_high,verdict");
  auto row = [&](const PairedAccuracy& a, const std::string& name) {
    out << fmt::format("{},{},{},{},{},{},{},{},{},{}\n", schemas::kEvalMcCsv.id, csv_escape(name), a.questions, csv_number(a.golden_acc), csv_number(a.target_acc),
                       csv_number(a.diff), csv_number(a.mcnemar.p_value), csv_number(a.bootstrap.low),
                       csv_number(a.bootstrap.high), verdict_name(a.verdict));
  };
  row(r.overall, "overall");
  for (const auto& s : r.subjects) row(s, s.group);
  return out.str();
}

std::string lm_eval_json(const LmEvalResult& r, int indent) {
  json j;
  j["schema"] = schemas::kEvalLmEval.id;
  j["a"] = {{"source", r.a_source}};
  j["b"] = {{"source", r.b_source}};
  j["thresholds"] = thresholds_json(r.thresholds);
  j["verdict"] = verdict_name(r.verdict);
  json metrics = json::array();
  for (const auto& m : r.metrics) {
    json o;
    o["task"] = m.task;
    o["metric"] = m.metric;
    o["filter"] = m.filter;
    o["a"] = json_number<json>(m.a);
    o["a_stderr"] = json_number<json>(m.a_stderr);
    o["b"] = json_number<json>(m.b);
    o["b_stderr"] = json_number<json>(m.b_stderr);
    o["n_a"] = m.n_a >= 0 ? json(m.n_a) : json(nullptr);
    o["n_b"] = m.n_b >= 0 ? json(m.n_b) : json(nullptr);
    o["diff"] = json_number<json>(m.diff);
    o["z"] = json_number<json>(m.z);
    o["p_value"] = json_number<json>(m.p_value);
    o["paired"] = m.paired ? paired_json(*m.paired) : json(nullptr);
    o["flips"] = m.flips_listed ? flips_json(m.flips, true) : json(nullptr);
    o["distinguishable"] = m.distinguishable;
    o["verdict"] = verdict_name(m.verdict);
    metrics.push_back(o);
  }
  j["metrics"] = metrics;
  j["samples"] = json::array();
  for (const auto& s : r.samples) j["samples"].push_back({{"task", s.task}, {"a", s.a}, {"b", s.b}});
  j["only_a"] = r.only_a;
  j["only_b"] = r.only_b;
  j["problems"] = json_problems<json>(r.problems);
  return json_text(j, indent);
}

std::string lm_eval_csv(const LmEvalResult& r) {
  std::ostringstream out;
  out << csv_header("task,metric,filter,a,b,diff,z,p_value,paired_p,ci_low,ci_high,verdict");
  for (const auto& m : r.metrics)
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", schemas::kEvalLmEvalCsv.id, csv_escape(m.task), csv_escape(m.metric), csv_escape(m.filter), csv_number(m.a), csv_number(m.b),
                       csv_number(m.diff), csv_number(m.z), csv_number(m.p_value),
                       m.paired ? csv_number(m.paired->mcnemar.p_value) : "",
                       m.paired ? csv_number(m.paired->bootstrap.low) : "",
                       m.paired ? csv_number(m.paired->bootstrap.high) : "", verdict_name(m.verdict));
  return out.str();
}

}  // namespace parity::eval
