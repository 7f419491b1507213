// parity.compare/1: the JSON form of a CompareReport, the one serializer of the schema
// (docs/compare-json.md is the contract).
#include <algorithm>
#include <array>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <variant>

#include "parity/compare_runs.h"
#include "parity/json_number.h"

namespace parity {

using nlohmann::json;

namespace {

json json_number(double v) { return parity::json_number<json>(v); }

json fingerprint_json(const std::optional<std::string>& text) {
  if (!text) return nullptr;
  json parsed = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? json(*text) : parsed;
}

json site_json(const EventSite& site) { return json{{"call", site.call}, {"module", site.module}, {"op", site.op}}; }

json record_to_json(const Record& r) {
  return json{{"name", r.name},       {"file", r.file},       {"dtype", dtype_name(r.dtype)},
              {"shape", r.shape},     {"module", r.module},   {"op", r.op},
              {"direction", r.direction}, {"role", r.role},   {"index", r.index},
              {"step", r.step},       {"rank", r.rank},       {"order", r.order},
              {"event", event_stem(r)}, {"site", site_json(event_site(r))}};
}

// ---- rows: written straight as text ------------------------------------------------------------------
// A million-row report spent most of its output time building and freeing a nlohmann tree per row. A row
// is written here directly, in the spelling nlohmann's dump(2) gives the same document — keys in sorted
// order, doubles by nlohmann's own shortest round-trip formatting, strings escaped by nlohmann unless
// they are plain printable ASCII — so that the two cannot differ (tests/compare/row_json_test.cpp holds
// it to a nlohmann rendering of random rows). compare_report_to_json parses these texts back.
class RowWriter {
 public:
  RowWriter(std::string& out, std::string_view pad) : out_(out), pad_(pad) {}

  void open() {
    out_ += '{';
    first_ = true;
    ++depth_;
  }
  void close() {
    --depth_;
    newline();
    out_ += '}';
    first_ = false;
  }
  // Starts a member: its key; the value follows.
  RowWriter& key(std::string_view k) {
    if (!first_) out_ += ',';
    newline();
    out_ += '"';
    out_ += k;  // parity's own keys: plain ASCII
    out_ += "\": ";
    first_ = false;
    return *this;
  }
  void number(double v) {  // json_number's spelling: NaN and infinities as strings
    if (std::isnan(v)) return text("NaN");
    if (std::isinf(v)) return text(v > 0 ? "Infinity" : "-Infinity");
    char buf[64];
    out_.append(buf, nlohmann::detail::to_chars(buf, buf + sizeof buf, v));
  }
  void integer(int64_t v) {
    char buf[24];
    out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  }
  void boolean(bool v) { out_ += v ? "true" : "false"; }
  void null() { out_ += "null"; }
  void text(std::string_view s) {
    const bool plain = std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
    if (plain) {
      out_ += '"';
      out_ += s;
      out_ += '"';
    } else {
      out_ += json_text(json(std::string(s)));  // escapes and U+FFFD as nlohmann writes them
    }
  }
  void integers(const std::vector<int64_t>& v) {
    if (v.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    ++depth_;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out_ += ',';
      newline();
      integer(v[i]);
    }
    --depth_;
    newline();
    out_ += ']';
  }

 private:
  void newline() {
    out_ += '\n';
    out_ += pad_;
    out_.append(2 * static_cast<size_t>(depth_), ' ');
  }
  std::string& out_;
  std::string_view pad_;
  int depth_ = 0;
  bool first_ = true;
};

// One value of the metric tables, by its type (json_number's spelling for doubles).
void write_side_stats(RowWriter& w, const TensorStats& s);
void write_value(RowWriter& w, double v) { w.number(v); }
void write_value(RowWriter& w, int64_t v) { w.integer(v); }
void write_value(RowWriter& w, bool v) { w.boolean(v); }
void write_value(RowWriter& w, const TensorStats& s) { write_side_stats(w, s); }

// The indices of `fields` in the order of their names: nlohmann's dump writes an object's keys sorted,
// and the rows must be spelled as it spells them (the metric tables keep PairMetrics' order).
template <typename Field, size_t N>
constexpr std::array<size_t, N> sorted_by_name(const Field (&fields)[N]) {
  std::array<size_t, N> order{};
  for (size_t i = 0; i < N; ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return std::string_view(fields[a].name) < std::string_view(fields[b].name); });
  return order;
}
constexpr auto kSideStatsJsonOrder = sorted_by_name(kSideStatsFields);
constexpr auto kMetricJsonOrder = sorted_by_name(kMetricFields);

// One TensorStats, two published spellings (docs/compare-json.md). A compared pair's side
// (`rows[].metrics.golden_stats`): the kSideStatsFields, ±Inf split, std, no numel.
void write_side_stats(RowWriter& w, const TensorStats& s) {
  w.open();
  for (size_t i : kSideStatsJsonOrder) {
    const TensorStatsField& f = kSideStatsFields[i];
    w.key(f.name);
    std::visit([&](auto member) { write_value(w, s.*member); }, f.member);
  }
  w.close();
}

// A statistics-mode side (`rows[].stats.golden`): what statistics dumps hold, one Inf total, numel, no std.
void write_tensor_stats(RowWriter& w, const TensorStats& s) {
  w.open();
  w.key("absmax").number(s.absmax);
  w.key("inf_count").integer(s.inf_count);
  w.key("l2norm").number(s.l2norm);
  w.key("max").number(s.max);
  w.key("mean").number(s.mean);
  w.key("min").number(s.min);
  w.key("nan_count").integer(s.nan_count);
  w.key("numel").integer(s.numel);
  w.key("subnormal_count").integer(s.subnormal_count);
  w.key("zero_count").integer(s.zero_count);
  w.close();
}

void write_metrics(RowWriter& w, const PairMetrics& m) {
  w.open();
  for (size_t i : kMetricJsonOrder) {
    const MetricField& f = kMetricFields[i];
    w.key(f.name);
    std::visit([&](auto member) { write_value(w, m.*member); }, f.member);
  }
  w.close();
}

void write_stats_comparison(RowWriter& w, const CompareRow& row) {
  const StatsDifferences s = stats_differences(row);
  w.open();
  write_tensor_stats(w.key("golden"), golden_stats(row));
  w.key("max_diff").number(s.max_diff);
  w.key("max_rel").number(s.max_rel);
  w.key("mean_diff").number(s.mean_diff);
  w.key("mean_rel").number(s.mean_rel);
  w.key("min_diff").number(s.min_diff);
  w.key("min_rel").number(s.min_rel);
  w.key("norm_diff").number(s.norm_diff);
  w.key("norm_rel").number(s.norm_rel);
  write_tensor_stats(w.key("target"), target_stats(row));
  w.key("worst_rel").number(s.worst_rel);
  w.close();
}

void write_side(RowWriter& w, const Record& r) {
  w.open();
  w.key("dtype").text(dtype_name(r.dtype));
  w.key("file").text(r.file);
  w.key("shape").integers(r.shape);
  w.close();
}

void write_update(RowWriter& w, const ParameterUpdate& u) {
  w.open();
  w.key("differs").boolean(u.differs);
  w.key("from_step").integer(u.from_step);
  w.key("golden_norm").number(u.golden_norm);
  w.key("grad_rel_error").number(u.grad_rel_error);
  w.key("lost").integer(u.lost);
  w.key("moved").integer(u.moved);
  w.key("rel_error").number(u.rel_error);
  w.key("stalled").integer(u.stalled);
  w.close();
}

void write_site(RowWriter& w, const EventSite& site) {
  w.open();
  w.key("call").integer(site.call);
  w.key("module").text(site.module);
  w.key("op").text(site.op);
  w.close();
}

}  // namespace

void write_compare_row_json(const CompareRow& row, std::string& out, std::string_view pad) {
  const Record& g = *row.golden;
  const Record& t = *row.target;
  RowWriter w(out, pad);
  w.open();
  w.key("cancelled").boolean(row.cancelled);
  if (row.checksum_equal) w.key("checksum_equal").boolean(*row.checksum_equal);
  else w.key("checksum_equal").null();
  w.key("direction").text(g.direction);
  w.key("error_structured").boolean(row.error_structured);
  // Revision 1.8: the event and its place in the model, read once here (analysis/events.cpp), so that no
  // reader parses names (the report's model tree places rows and analysis events by them).
  w.key("event").text(event_stem(g));
  w.key("fixed_reason").text(row.fixed_reason());
  w.key("fixed_verdict").text(verdict_name(row.fixed_verdict));
  w.key("flip").text(flip_role_name(row.flip));
  write_side(w.key("golden"), g);
  w.key("index").integer(g.index);
  w.key("loss_scale_log2").integer(row.loss_scale_log2);
  w.key("match").text(match_kind_name(row.match));
  w.key("match_confidence").number(row.match_confidence);
  if (row.metrics) write_metrics(w.key("metrics"), *row.metrics);
  else w.key("metrics").null();
  w.key("mode").text(compare_mode_name(row.mode));
  w.key("module").text(g.module);
  w.key("name").text(g.name);
  w.key("noise").text(noise_class_name(row.noise));
  w.key("noise_ratio").number(row.noise_ratio);
  w.key("op").text(g.op);
  w.key("order").integer(g.order);
  w.key("rank").integer(g.rank);
  w.key("reason").text(row.reason);
  w.key("role").text(g.role);
  w.key("shape_differs").boolean(row.shape_differs);
  write_site(w.key("site"), event_site(g));
  if (row.stats) write_stats_comparison(w.key("stats"), row);
  else w.key("stats").null();
  w.key("step").integer(g.step);
  write_side(w.key("target"), t);
  w.key("target_name").text(t.name);
  // Revision 1.7: the target record's own place in execution order, so that a reader can put a record
  // present only in the target between the rows it ran between (the report's model tree).
  w.key("target_order").integer(t.order);
  w.key("threshold_dtype").text(dtype_name(lower_precision(g.dtype, t.dtype)));
  if (row.update) write_update(w.key("update"), *row.update);
  else w.key("update").null();
  w.key("verdict").text(verdict_name(row.verdict));
  w.close();
}

namespace {

json shards_json(const CompareReport& report) {
  json out = json::array();
  for (const RowShards& rs : report.shards) {
    json parts = json::array();
    for (const ShardError& e : rs.shards)
      parts.push_back({{"label", e.label}, {"rel_l2", json_number(e.rel_l2)}, {"cosine", json_number(e.cosine)},
                       {"max_abs", json_number(e.max_abs)}});
    out.push_back({{"row", rs.row}, {"name", report.result.rows[rs.row].golden->name}, {"side", rs.side}, {"shards", std::move(parts)}});
  }
  return out;
}

json loss_scale_op_json(const std::optional<LossScaleOp>& op) {
  if (!op) return nullptr;
  return {{"event", op->event}, {"factor", json_number(op->factor)}};
}

// The (rank, step)s compared after unscaling the target (parity/loss_scale.h), with their evidence.
json loss_scales_json(const std::vector<LossScale>& scales) {
  json out = json::array();
  for (const LossScale& s : scales) {
    const ScaleEvidence& e = s.evidence;
    out.push_back({{"rank", s.rank}, {"step", s.step}, {"log2", e.log2_ratio},
                   {"factor", json_number(std::ldexp(1.0, e.log2_ratio))}, {"rows_at_ratio", e.rows_at_ratio},
                   {"rows_measured", e.rows_measured}, {"median_log2", json_number(e.median)},
                   {"max_deviation", json_number(e.max_deviation)}, {"golden_op", loss_scale_op_json(s.golden_op)},
                   {"target_op", loss_scale_op_json(s.target_op)}});
  }
  return out;
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
  // Where two runs of many steps part (docs/timeline.md); only when the comparison spans two steps or more.
  if (f.timeline) j["divergence_timeline"] = timeline_to_json(*f.timeline);

  json diag = json::array();
  for (const Diagnosis& d : f.diagnoses)
    diag.push_back({{"code", d.code}, {"title", d.title}, {"evidence", d.evidence}, {"advice", d.advice},
                    {"events", d.events}, {"strength", d.strength}, {"severity", severity_name(d.severity)}});
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
  j["loss_scales"] = loss_scales_json(result.loss_scales);
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
        {"verdict", run_verdict_name(report)},
        {"headline", run_headline(report)},
        {"policy", verdict_policy_name(result.policy)},
        {"exit_code", report.exit_code},
        {"no_input", report.no_input.empty() ? json(nullptr) : json(report.no_input)},
        {"verdict_raised_by", report.verdict_raised_by.empty() ? json(nullptr) : json(report.verdict_raised_by)}}},
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
  // Revision 1.4 (additive, issue 28): summary.verdict_raised_by, diagnosis[].severity, suspect kind "structure".
  // Revision 1.6 (additive, issue 31): summary.headline, the words the terminal's last line says.
  // Revision 1.7 (additive, issue 31): rows[].target_order, the target record's execution order.
  // Revision 1.8 (additive, issue 32): rows[].event and rows[].site, also on unmatched records.
  // Revision 1.9 (additive, issue 29): shards, the error of each part of a failing row held apart.
  // Revision 1.10 (additive, issue 30): divergence_timeline, over a comparison of two steps or more.
  j["revision"] = "1.10";
  j["shards"] = shards_json(report);
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
std::vector<std::string> row_texts(const RowList& rows, size_t begin, size_t end) {
  std::vector<std::string> texts(end - begin);
  const int64_t n = static_cast<int64_t>(texts.size());
#pragma omp parallel for schedule(dynamic, 64) if (n > 256)
  for (int64_t k = 0; k < n; ++k)
    write_compare_row_json(rows[begin + static_cast<size_t>(k)], texts[static_cast<size_t>(k)], "    ");
  return texts;
}

}  // namespace

json compare_report_to_json(const CompareReport& report, const std::vector<size_t>& rows) {
  json j = compare_report_head_to_json(report);
  json& out = j["rows"];
  std::string text;
  for (size_t i : rows) {
    text.clear();
    write_compare_row_json(report.result.rows[i], text, "");
    out.push_back(json::parse(text));
  }
  return j;
}

json compare_report_to_json(const CompareReport& report) {
  std::vector<size_t> all(report.result.rows.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return compare_report_to_json(report, all);
}

namespace {

// The document, pretty-printed, handed to `emit` in pieces of about 1 MiB.
template <typename Emit>
void write_report_text(const CompareReport& report, Emit emit) {
  const json head = compare_report_head_to_json(report);
  std::string buf = "{";
  bool first = true;
  auto flush = [&] {
    emit(std::string_view(buf));
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
}

}  // namespace

Status write_compare_report_json(const CompareReport& report, std::FILE* out) {
  write_report_text(report, [out](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), out); });
  return std::ferror(out) ? Status::IOError(std::string("write failed: ") + std::strerror(errno)) : Status::OK();
}

std::string compare_report_json_text(const CompareReport& report) {
  std::string text;
  write_report_text(report, [&text](std::string_view piece) { text += piece; });
  return text;
}

}  // namespace parity
