// JSON forms of the findings (keys added to parity.compare/1) and of parity.overflow/1
// (docs/diagnosis.md "JSON").
#include <cmath>

#include "parity/diagnosis.h"
#include "parity/json_number.h"

namespace parity {
namespace {

using nlohmann::json;


json range_json(const ValueRange& r) {
  return {{"name", r.name}, {"role", r.role}, {"dtype", dtype_name(r.dtype)}, {"min", json_number<json>(r.min)},
          {"max", json_number<json>(r.max)}, {"absmax", json_number<json>(r.absmax)}, {"numel", r.numel}, {"nan", r.nan_count},
          {"inf", r.inf_count}};
}

}  // namespace

json overflow_to_json(const OverflowReport& r) {
  json origins = json::array();
  for (const NanOrigin& o : r.origins) {
    json in = json::array(), out = json::array();
    for (const ValueRange& v : o.inputs) in.push_back(range_json(v));
    for (const ValueRange& v : o.outputs) out.push_back(range_json(v));
    origins.push_back({{"event", o.event}, {"module", o.module}, {"op", o.op}, {"direction", o.direction},
                       {"step", o.step}, {"rank", o.rank}, {"order", o.order}, {"inputs", in}, {"outputs", out},
                       {"contaminated", o.contaminated}, {"gradient", o.role_is_grad},
                       {"explanation", o.explanation}});
  }
  json near = json::array();
  for (const NearOverflow& n : r.near_overflow)
    near.push_back({{"name", n.name}, {"event", n.event}, {"direction", n.direction}, {"step", n.step},
                    {"rank", n.rank}, {"dtype", dtype_name(n.dtype)}, {"absmax", json_number<json>(n.absmax)},
                    {"limit", json_number<json>(n.limit)}});
  json under = json::array();
  for (const GradUnderflow& g : r.grad_underflow)
    under.push_back({{"name", g.name}, {"module", g.module}, {"step", g.step}, {"rank", g.rank},
                     {"dtype", dtype_name(g.dtype)}, {"numel", g.numel}, {"zero_fraction", json_number<json>(g.zero_fraction)},
                     {"subnormal_fraction", json_number<json>(g.subnormal_fraction)}});
  json problems = json::array();
  for (const Status& st : r.problems) problems.push_back({{"code", status_code_name(st.code())}, {"message", st.message()}});
  return {{"schema", kOverflowSchema},
          {"source", r.source},
          {"records", r.records},
          {"measured", r.measured},
          {"nonfinite_records", r.nonfinite_records},
          {"origins", origins},
          {"near_overflow", near},
          {"grad_underflow", under},
          {"grads_overflow", r.grads_overflow},
          {"grads_underflow", r.grads_underflow},
          {"loss_scale_advice", r.loss_scale_advice.empty() ? json(nullptr) : json(r.loss_scale_advice)},
          {"problems", problems}};
}

json findings_to_json(const Findings& f, const CompareResult& result) {
  json j;
  json cd = json::array();
  for (const ConfigDifference& d : f.config)
    cd.push_back({{"key", d.key}, {"golden", d.golden}, {"target", d.target}, {"category", d.category},
                  {"numeric", d.numeric}});
  j["config_diff"] = cd;

  if (f.analysis.first_divergence) {
    const FirstDivergence& d = *f.analysis.first_divergence;
    j["first_divergence"] = {{"row", d.row},           {"name", d.name},       {"event", d.event},
                             {"module", d.module},     {"op", d.op},           {"direction", d.direction},
                             {"role", d.role},         {"step", d.step},       {"rank", d.rank},
                             {"verdict", verdict_name(d.verdict)},             {"reason", d.reason},
                             {"noise", noise_class_name(d.noise)},             {"noise_ratio", json_number<json>(d.noise_ratio)}};
  } else {
    j["first_divergence"] = nullptr;
  }

  json suspects = json::array();
  for (const Suspect& s : f.analysis.suspects)
    suspects.push_back({{"kind", suspect_kind_name(s.kind)}, {"event", s.name}, {"module", s.module}, {"op", s.op},
                        {"direction", s.direction}, {"step", s.step}, {"rank", s.rank}, {"score", json_number<json>(s.score)},
                        {"input_ratio", json_number<json>(s.input_ratio)}, {"param_ratio", json_number<json>(s.param_ratio)},
                        {"output_ratio", json_number<json>(s.output_ratio)}, {"weak_evidence", s.weak_evidence}, {"why", s.why}});
  j["suspects"] = suspects;

  json diag = json::array();
  for (const Diagnosis& d : f.diagnoses)
    diag.push_back({{"code", d.code}, {"title", d.title}, {"evidence", d.evidence}, {"advice", d.advice},
                    {"events", d.events}, {"strength", d.strength}});
  j["diagnosis"] = diag;

  // How each pair was matched, and what stayed unmatched.
  int64_t exact = 0, mapped = 0, aligned = 0;
  json pairs = json::array();
  for (const CompareRow& row : result.rows) {
    switch (row.match) {
      case MatchKind::kExact: ++exact; break;
      case MatchKind::kMapped: ++mapped; break;
      case MatchKind::kAligned: ++aligned; break;
    }
    if (row.match != MatchKind::kExact)
      pairs.push_back({{"golden", row.golden.name}, {"target", row.target.name}, {"match", match_kind_name(row.match)}});
  }
  json ug = json::array(), ut = json::array();
  for (const Record& r : result.unmatched_golden) ug.push_back(r.name);
  for (const Record& r : result.unmatched_target) ut.push_back(r.name);
  j["alignment"] = {{"exact", exact}, {"mapped", mapped}, {"aligned", aligned}, {"pairs", pairs},
                    {"unmatched_golden", ug}, {"unmatched_target", ut}};

  j["overflow"] = {{"target", overflow_to_json(f.target_overflow)}, {"golden", overflow_to_json(f.golden_overflow)}};
  j["noise_summary"] = {{"noise", f.analysis.rows_noise},         {"elevated", f.analysis.rows_elevated},
                        {"structural", f.analysis.rows_structural}, {"unknown", f.analysis.rows_unknown},
                        {"worst", noise_class_name(f.analysis.worst_noise)},
                        {"statistics_only", f.analysis.statistics_only}};
  return j;
}

}  // namespace parity
