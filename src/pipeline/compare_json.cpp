// parity.compare/1: the JSON form of a CompareReport, the one serializer of the schema
// (docs/compare-json.md is the contract).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "parity/compare_runs.h"
#include "parity/json_number.h"

namespace parity {

using nlohmann::json;

namespace {

json json_number(double v) { return parity::json_number<json>(v); }

json side_stats_json(const SideStats& s) {
  return json{{"min", json_number(s.min)},       {"max", json_number(s.max)},
              {"mean", json_number(s.mean)},     {"l2norm", json_number(s.l2norm)},
              {"std", json_number(s.std)},       {"absmax", json_number(s.absmax)},
              {"nan_count", s.nan_count},        {"pinf_count", s.pinf_count},
              {"ninf_count", s.ninf_count},      {"zero_count", s.zero_count},
              {"subnormal_count", s.subnormal_count}};
}

json tensor_stats_json(const TensorStats& s) {
  return json{{"min", json_number(s.min)},     {"max", json_number(s.max)},
              {"mean", json_number(s.mean)},   {"l2norm", json_number(s.l2norm)},
              {"absmax", json_number(s.absmax)}, {"nan_count", s.nan_count},
              {"inf_count", s.inf_count},      {"zero_count", s.zero_count},
              {"subnormal_count", s.subnormal_count}, {"numel", s.numel}};
}

json metrics_json(const PairMetrics& m) {
  return json{{"numel", m.numel},
              {"compared", m.compared},
              {"cosine", json_number(m.cosine)},
              {"euclidean", json_number(m.euclidean)},
              {"rel_l2", json_number(m.rel_l2)},
              {"rmse", json_number(m.rmse)},
              {"sqnr_db", json_number(m.sqnr_db)},
              {"max_abs", json_number(m.max_abs)},
              {"max_abs_index", m.max_abs_index},
              {"mean_abs", json_number(m.mean_abs)},
              {"max_rel", json_number(m.max_rel)},
              {"max_rel_index", m.max_rel_index},
              {"thousandth_ratio", json_number(m.thousandth_ratio)},
              {"five_thousandth_ratio", json_number(m.five_thousandth_ratio)},
              {"frac_abs_gt_1e6", json_number(m.frac_abs_gt_1e6)},
              {"frac_abs_gt_1e4", json_number(m.frac_abs_gt_1e4)},
              {"frac_abs_gt_1e2", json_number(m.frac_abs_gt_1e2)},
              {"ulp_max", json_number(m.ulp_max)},
              {"ulp_mean", json_number(m.ulp_mean)},
              {"frac_ulp_gt1", json_number(m.frac_ulp_gt1)},
              {"nonfinite_agree", m.nonfinite_agree},
              {"nonfinite_mismatch", m.nonfinite_mismatch},
              {"ftz_count", m.ftz_count},
              {"kl", json_number(m.kl)},
              {"kl_computed", m.kl_computed},
              {"kl_rows", m.kl_rows},
              {"kl_rows_skipped", m.kl_rows_skipped},
              {"golden_stats", side_stats_json(m.golden)},
              {"target_stats", side_stats_json(m.target)}};
}

json stats_comparison_json(const StatsComparison& s) {
  return json{{"golden", tensor_stats_json(s.golden)},  {"target", tensor_stats_json(s.target)},
              {"max_diff", json_number(s.max_diff)},    {"min_diff", json_number(s.min_diff)},
              {"mean_diff", json_number(s.mean_diff)},  {"norm_diff", json_number(s.norm_diff)},
              {"max_rel", json_number(s.max_rel)},      {"min_rel", json_number(s.min_rel)},
              {"mean_rel", json_number(s.mean_rel)},    {"norm_rel", json_number(s.norm_rel)},
              {"worst_rel", json_number(s.worst_rel)}};
}

json fingerprint_json(const std::optional<std::string>& text) {
  if (!text) return nullptr;
  json parsed = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? json(*text) : parsed;
}

json record_to_json(const Record& r) {
  return json{{"name", r.name},       {"file", r.file},       {"dtype", dtype_name(r.dtype)},
              {"shape", r.shape},     {"module", r.module},   {"op", r.op},
              {"direction", r.direction}, {"role", r.role},   {"index", r.index},
              {"step", r.step},       {"rank", r.rank},       {"order", r.order}};
}

json parameter_update_json(const ParameterUpdate& u) {
  return {{"from_step", u.from_step}, {"rel_error", json_number(u.rel_error)}, {"golden_norm", json_number(u.golden_norm)},
          {"grad_rel_error", json_number(u.grad_rel_error)}, {"differs", u.differs}};
}

json compare_row_to_json(const CompareRow& row) {
  const Record& g = *row.golden;
  json j{{"name", g.name},
         {"target_name", row.target->name},
         {"match", match_kind_name(row.match)},
         {"match_confidence", json_number(row.match_confidence)},
         {"mode", compare_mode_name(row.mode)},
         {"golden", {{"dtype", dtype_name(g.dtype)}, {"shape", g.shape}, {"file", g.file}}},
         {"target", {{"dtype", dtype_name(row.target->dtype)}, {"shape", row.target->shape}, {"file", row.target->file}}},
         {"module", g.module},
         {"op", g.op},
         {"direction", g.direction},
         {"role", g.role},
         {"index", g.index},
         {"step", g.step},
         {"rank", g.rank},
         {"order", g.order},
         {"shape_differs", row.shape_differs},
         {"threshold_dtype", dtype_name(lower_precision(g.dtype, row.target->dtype))},
         {"metrics", row.metrics ? metrics_json(*row.metrics) : json(nullptr)},
         {"stats", row.stats ? stats_comparison_json(*row.stats) : json(nullptr)},
         {"checksum_equal", row.checksum_equal ? json(*row.checksum_equal) : json(nullptr)},
         {"update", row.update ? parameter_update_json(*row.update) : json(nullptr)},
         {"verdict", verdict_name(row.verdict)},
         {"reason", row.reason},
         {"fixed_verdict", verdict_name(row.fixed_verdict)},
         {"fixed_reason", row.fixed_reason},
         {"noise", noise_class_name(row.noise)},
         {"noise_ratio", json_number(row.noise_ratio)}};
  return j;
}


void findings_json(const Findings& f, const CompareResult& result, json& j) {
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
                             {"noise", noise_class_name(d.noise)},             {"noise_ratio", json_number(d.noise_ratio)}};
  } else {
    j["first_divergence"] = nullptr;
  }

  json suspects = json::array();
  for (const Suspect& s : f.analysis.suspects) {
    json o = {{"kind", suspect_kind_name(s.kind)}, {"event", s.name}, {"module", s.module}, {"op", s.op},
              {"direction", s.direction}, {"step", s.step}, {"rank", s.rank}, {"score", json_number(s.score)},
              {"input_ratio", json_number(s.input_ratio)}, {"param_ratio", json_number(s.param_ratio)},
              {"output_ratio", json_number(s.output_ratio)}, {"weak_evidence", s.weak_evidence}, {"why", s.why}};
    if (!s.replay_status.empty()) o["replay"] = {{"status", s.replay_status}, {"evidence", s.replay_evidence}};
    suspects.push_back(std::move(o));
  }
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
      pairs.push_back({{"golden", row.golden->name}, {"target", row.target->name}, {"match", match_kind_name(row.match)}});
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
}

}  // namespace

namespace {

// Everything of the document but the rows ("rows" is an empty array here).
json compare_report_head_to_json(const CompareReport& report) {
  const CompareResult& result = report.result;
  const CompareSummary& s = result.summary;
  json rows = json::array();
  json ug = json::array(), ut = json::array();
  for (const Record& r : result.unmatched_golden) ug.push_back(record_to_json(r));
  for (const Record& r : result.unmatched_target) ut.push_back(record_to_json(r));
  json problems = json::array();
  for (size_t i = 0; i < result.problems.size(); ++i) {
    const Status& st = result.problems[i];
    problems.push_back({{"side", static_cast<int64_t>(i) < result.golden_problems ? "golden" : "target"},
                        {"code", status_code_name(st.code())},
                        {"message", st.message()}});
  }
  json thresholds = json::parse(thresholds_to_json(result.thresholds));
  json j{
      {"schema", kCompareSchema},
      {"golden", {{"source", result.golden_source}, {"fingerprint", fingerprint_json(result.golden_fingerprint)}}},
      {"target", {{"source", result.target_source}, {"fingerprint", fingerprint_json(result.target_fingerprint)}}},
      {"thresholds", std::move(thresholds)},
      {"summary",
       {{"rows", s.rows},
        {"pass", s.pass},
        {"warn", s.warn},
        {"fail", s.fail},
        {"error", s.error},
        {"unmatched_golden", s.unmatched_golden},
        {"unmatched_target", s.unmatched_target},
        {"unmatched_implementation", s.unmatched_implementation},
        {"problems", s.problems},
        {"verdict", verdict_name(s.verdict)},
        {"policy", verdict_policy_name(result.policy)},
        {"exit_code", report.exit_code},
        {"no_input", report.no_input.empty() ? json(nullptr) : json(report.no_input)}}},
      {"rows", std::move(rows)},
      {"unmatched", {{"golden", std::move(ug)}, {"target", std::move(ut)}}},
      {"problems", std::move(problems)},
      {"notes", result.notes},
      {"parity_version", PARITY_VERSION},
      {"command", report.command},
      {"elapsed_seconds", report.elapsed_seconds}};
  findings_json(report.findings, result, j);
  // Revision 1.1 (additive, docs/compare-json.md "Replay"): the replay of the suspects, when asked.
  // Revision 1.3 (additive): the peak resident memory of every process.
  j["revision"] = "1.3";
  j["peak_resident_bytes"] = result.peak_resident_bytes;
  if (report.replay_asked)
    j["replay"] = {{"problem", report.replay_problem.empty() ? json(nullptr) : json(report.replay_problem)},
                   {"seconds", report.replay_seconds}};
  else
    j["replay"] = nullptr;
  return j;
}

// `text` (a value dumped with indent 2) re-indented to sit `depth` levels deep.
std::string indented(const std::string& text, const std::string& pad) {
  std::string out;
  out.reserve(text.size() + text.size() / 8 + 64);
  size_t from = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', from)) {
    out.append(text, from, nl + 1 - from);
    out += pad;
    from = nl + 1;
  }
  out.append(text, from, std::string::npos);
  return out;
}

// The rows [begin, end) as their JSON texts, each indented to sit in the "rows" array, built by all
// threads: a row's text depends on that row alone, and a 1,000,000-row report spends most of its
// output time here.
std::vector<std::string> row_texts(const std::vector<CompareRow>& rows, size_t begin, size_t end) {
  std::vector<std::string> texts(end - begin);
  const int64_t n = static_cast<int64_t>(texts.size());
#pragma omp parallel for schedule(dynamic, 64) if (n > 256)
  for (int64_t k = 0; k < n; ++k)
    texts[static_cast<size_t>(k)] = indented(json_text(compare_row_to_json(rows[begin + static_cast<size_t>(k)]), 2), "    ");
  return texts;
}

}  // namespace

json compare_report_to_json(const CompareReport& report) {
  json j = compare_report_head_to_json(report);
  json& rows = j["rows"];
  for (const CompareRow& r : report.result.rows) rows.push_back(compare_row_to_json(r));
  return j;
}

Status write_compare_report_json(const CompareReport& report, std::FILE* out) {
  const json head = compare_report_head_to_json(report);
  std::string buf = "{";
  bool first = true;
  auto flush = [&] {
    std::fwrite(buf.data(), 1, buf.size(), out);
    buf.clear();
  };
  for (auto it = head.begin(); it != head.end(); ++it) {  // keys in the object's (sorted) order
    buf += first ? "\n  " : ",\n  ";
    first = false;
    buf += json_text(json(it.key())) + ": ";
    if (it.key() != "rows") {
      buf += indented(json_text(it.value(), 2), "  ");
      continue;
    }
    const auto& rows = report.result.rows;
    if (rows.empty()) {
      buf += "[]";
      continue;
    }
    buf += "[";
    constexpr size_t kBatch = 8192;  // rows serialized at once: bounds the texts held (~2 KiB each)
    for (size_t begin = 0; begin < rows.size(); begin += kBatch) {
      const std::vector<std::string> texts = row_texts(rows, begin, std::min(rows.size(), begin + kBatch));
      for (size_t k = 0; k < texts.size(); ++k) {
        buf += begin + k ? ",\n    " : "\n    ";
        buf += texts[k];
        if (buf.size() > (1u << 20)) flush();
      }
    }
    buf += "\n  ]";
  }
  buf += "\n}\n";
  flush();
  return std::ferror(out) ? Status::IOError(std::string("write failed: ") + std::strerror(errno)) : Status::OK();
}

}  // namespace parity
