// The terminal summary of `parity compare`: a table that fits 100 columns, worst rows first, then the
// records left unmatched, unreadable files, notes, and one final verdict line (Polygraphy style).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <tuple>
#include <vector>

#include "parity/terminal_text.h"
#include "parity/compare_report.h"
#include "parity/number_text.h"

namespace parity::report {

namespace {

// ANSI SGR colouring, kept local so that report does not depend on the CLI (src/cli/ui.h does the
// same for subcommands).
std::string paint(const std::string& text, const char* sgr, bool color) {
  return color ? std::string("\033[") + sgr + "m" + text + "\033[0m" : text;
}
const char* verdict_sgr(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "32";
    case Verdict::kWarn: return "33";
    case Verdict::kFail: return "1;31";
    case Verdict::kError: return "35";
  }
  return "0";
}

std::string pad(std::string s, size_t w, bool right = false) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

// Shorten to `w` columns keeping the head (module path, layer index) and the tail (the leaf):
// "model.layers.7.a...output_projection".
std::string cut_middle(const std::string& s, size_t w) {
  if (s.size() <= w) return s;
  if (w <= 3) return s.substr(0, w);
  const size_t head = (w - 3) / 2;
  const size_t tail = w - 3 - head;
  return s.substr(0, head) + "..." + s.substr(s.size() - tail);
}

// Names come from other people's files: control characters are escaped first (terminal_text.h).
std::string fit(const std::string& raw, size_t w) { return cut_middle(terminal_text(raw), w); }

bool is_number(const std::string& p) {
  return !p.empty() && std::all_of(p.begin(), p.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// A record name shortened to `w` columns without losing what tells rows apart (issue 31 §4: a middle cut
// turned layers.1.attn/float#0/... and .../float#1/... into one "layers.1.attn/fl...0/forward/input/0").
// A name is a module path and, from its first '/', the event's tail (op#k/direction/role/index), which
// is kept whole. The module path's dotted components that are not numbers are dropped first, from the
// left; the layer indices and the leaf module stay: "model.layers.17.self_attn.q_proj/forward/output/0"
// → "...17.self_attn.q_proj/forward/output/0". Only what still does not fit is cut in the middle.
std::string fit_name(const std::string& raw, size_t w) {
  const std::string s = terminal_text(raw);
  if (s.size() <= w) return s;
  const size_t slash = std::min(s.find('/'), s.size());
  const std::string tail = s.substr(slash);
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t dot = std::min(s.find('.', at), slash);
    parts.push_back(s.substr(at, dot - at));
    if (dot >= slash) break;
    at = dot + 1;
  }
  std::string shortened = s;
  for (size_t k = 0; k + 1 < parts.size() && shortened.size() > w; ++k) {
    if (is_number(parts[k])) continue;
    parts[k].clear();  // dropped
    shortened = "...";
    for (const std::string& p : parts)
      if (!p.empty()) shortened += (shortened == "..." ? "" : ".") + p;
    shortened += tail;
  }
  return cut_middle(shortened, w);
}

std::string cell(double v) {
  if (std::isnan(v)) return std::string(kNoValueText);
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  if (v == 0.0) return "0";
  std::snprintf(buf, sizeof buf, "%.3e", v);
  return buf;
}
std::string cosine_cell(double v) {
  if (std::isnan(v)) return std::string(kNoValueText);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}
std::string sqnr_cell(double v) {
  if (std::isnan(v)) return std::string(kNoValueText);
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string dtypes_cell(const CompareRow& r) {
  const std::string g = dtype_name(r.golden->dtype), t = dtype_name(r.target->dtype);
  return g == t ? g : g + ">" + t;
}

// The value of a sortable metric for a row, oriented so that larger = worse; NaN when absent.
double badness(const CompareRow& r, const std::string& metric) {
  if (!r.metrics) {
    if (r.stats && (metric == "rel_l2" || metric == "max_rel")) return stats_differences(r).worst_rel;
    return kNaN;
  }
  const PairMetrics& m = *r.metrics;
  if (metric == "cosine") return std::isnan(m.cosine) ? kNaN : 1.0 - m.cosine;
  if (metric == "max_abs") return m.max_abs;
  if (metric == "max_rel") return m.max_rel;
  if (metric == "rel_l2") return m.rel_l2;
  if (metric == "sqnr_db") return std::isnan(m.sqnr_db) ? kNaN : -m.sqnr_db;
  if (metric == "kl") return m.kl_computed ? m.kl : kNaN;
  if (metric == "ulp_max") return m.ulp_max;
  return kNaN;
}

// badness() of every row, once: a sort compares each row many times, and a statistics row's value is
// computed from its statistics.
std::vector<double> badness_of_rows(const RowList& rows, const std::string& metric) {
  std::vector<double> bad(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) bad[i] = badness(rows[i], metric);
  return bad;
}

// Worse first; rows without the value go last.
bool worse(double a, double b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return a > b;
}

// The worst rows first: verdict (error, fail, warn, pass), then `bad` (badness_of_rows, worse first),
// then execution order. Each row's key is read once and the keys sorted on their own (see
// rows_in_execution_order, parity/compare.h); the row index last makes the keys unique, so the sort is
// stable.
std::vector<size_t> worst_first(const RowList& rows, const std::vector<double>& bad) {
  struct Key {
    Verdict verdict;
    double bad;
    ExecutionPosition at;
    size_t row;
  };
  SpillVector<Key> keys;
  keys.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) keys.push_back({rows[i].verdict, bad[i], execution_position(rows[i]), i});
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.verdict != b.verdict) return a.verdict > b.verdict;
    if (worse(a.bad, b.bad)) return true;
    if (worse(b.bad, a.bad)) return false;
    return std::tie(a.at, a.row) < std::tie(b.at, b.row);
  });
  std::vector<size_t> idx(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) idx[i] = keys[i].row;
  return idx;
}

}  // namespace

const std::vector<std::string>& sortable_metrics() {
  static const std::vector<std::string> names = {"cosine", "max_abs", "max_rel", "rel_l2", "sqnr_db", "kl", "ulp_max"};
  return names;
}

std::vector<size_t> sort_rows(const CompareResult& result, const TableOptions& options) {
  const auto& rows = result.rows;
  switch (options.sort) {
    case SortKey::kName: {
      std::vector<std::pair<std::string_view, size_t>> names(rows.size());  // views into the intern pool
      for (size_t i = 0; i < rows.size(); ++i) names[i] = {rows[i].golden->name, i};
      std::sort(names.begin(), names.end());
      std::vector<size_t> idx(names.size());
      for (size_t i = 0; i < names.size(); ++i) idx[i] = names[i].second;
      return idx;
    }
    case SortKey::kOrder:
      return rows_in_execution_order(rows);
    case SortKey::kMetric: {
      const std::vector<double> bad = badness_of_rows(rows, options.sort_metric);
      std::vector<size_t> idx(rows.size());
      std::iota(idx.begin(), idx.end(), size_t{0});
      std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return worse(bad[a], bad[b]); });
      return idx;
    }
    case SortKey::kWorst:
      // The relative L2 error; statistics rows: their worst relative error.
      return worst_first(rows, badness_of_rows(rows, "rel_l2"));
  }
  return {};
}


void print_compare_header(std::FILE* out, const CompareResult& result, const TableOptions& options) {
  std::fprintf(out, "%s %s\n", paint("golden", "1", options.color).c_str(), result.golden_source.c_str());
  std::fprintf(out, "%s %s\n", paint("target", "1", options.color).c_str(), result.target_source.c_str());
}

void print_compare_table(std::FILE* out, const CompareResult& result, const TableOptions& options) {
  // Fixed columns: verdict 5, dtypes 9, cosine 8, max abs 9, max rel 9, rel L2 9, SQNR 6, with one
  // space between columns; the name takes what is left (at least 16).
  const int fixed = 5 + 9 + 8 + 9 + 9 + 9 + 6 + 8;
  const std::vector<size_t> order = sort_rows(result, options);
  const size_t shown = options.limit > 0 ? std::min(order.size(), static_cast<size_t>(options.limit)) : order.size();
  size_t name_w = static_cast<size_t>(std::max(16, options.width - fixed - 1));
  if (options.full_names)  // --wide: the column takes the longest name shown
    for (size_t k = 0; k < shown; ++k)
      name_w = std::max(name_w, terminal_text(result.rows[order[k]].golden->name.str()).size());
  const std::string header = pad("", 5) + " " + pad("name", name_w) + " " + pad("dtypes", 9) + " " +
                             pad("cosine", 8, true) + " " + pad("max abs", 9, true) + " " +
                             pad("max rel", 9, true) + " " + pad("rel L2", 9, true) + " " + pad("SQNR", 6, true);
  std::fprintf(out, "\n%s\n", paint(header, "1", options.color).c_str());

  for (size_t k = 0; k < shown; ++k) {
    const CompareRow& r = result.rows[order[k]];
    std::string line = paint(pad(verdict_name(r.verdict), 5), verdict_sgr(r.verdict), options.color) + " " +
                       pad(fit_name(r.golden->name, name_w), name_w) + " " + pad(fit(dtypes_cell(r), 9), 9) + " ";
    if (r.metrics) {
      const PairMetrics& m = *r.metrics;
      line += pad(cosine_cell(m.cosine), 8, true) + " " + pad(cell(m.max_abs), 9, true) + " " +
              pad(cell(m.max_rel), 9, true) + " " + pad(cell(m.rel_l2), 9, true) + " " + pad(sqnr_cell(m.sqnr_db), 6, true);
    } else {
      line += pad(std::string("(") + compare_mode_name(r.mode) + ")", 8 + 1 + 9, true);
    }
    std::fprintf(out, "%s\n", line.c_str());
    // The reason of a row that did not pass (and of every row with --verbose) on the next line.
    if (r.verdict != Verdict::kPass || options.verbose || !r.metrics) {
      const size_t w = static_cast<size_t>(std::max(20, options.width - 8));
      std::string reason = r.reason;
      if (!options.verbose && reason.size() > w) reason = reason.substr(0, w - 3) + "...";
      std::fprintf(out, "      %s\n", paint(reason, "2", options.color).c_str());
    }
  }
  if (shown < order.size()) {
    std::fprintf(out, "... %zu more rows (--all or --limit N to show them)\n", order.size() - shown);
  }
  const CompareSummary& s = result.summary;
  std::fprintf(out, "\n%lld rows: %s pass, %s warn, %s fail, %s error\n", static_cast<long long>(s.rows),
               paint(std::to_string(s.pass), verdict_sgr(Verdict::kPass), options.color && s.pass > 0).c_str(),
               paint(std::to_string(s.warn), verdict_sgr(Verdict::kWarn), options.color && s.warn > 0).c_str(),
               paint(std::to_string(s.fail), verdict_sgr(Verdict::kFail), options.color && s.fail > 0).c_str(),
               paint(std::to_string(s.error), verdict_sgr(Verdict::kError), options.color && s.error > 0).c_str());
}

namespace {

void print_unmatched_side(std::FILE* out, const RecordList& recs, const char* label,
                          const TableOptions& options) {
  if (recs.empty()) return;
  std::fprintf(out, "\n%s (%zu): present on one side only, not compared\n",
               paint(label, "33", options.color).c_str(), recs.size());
  const size_t shown = options.limit > 0 ? std::min(recs.size(), static_cast<size_t>(options.limit)) : recs.size();
  for (size_t i = 0; i < shown; ++i) {
    const Record& r = recs[i];
    std::string where;
    if (r.step >= 0) where += " step " + std::to_string(r.step);
    if (r.rank >= 0) where += " rank " + std::to_string(r.rank);
    std::fprintf(out, "  %s  %s %s%s\n", fit_name(r.name, static_cast<size_t>(std::max(20, options.width - 30))).c_str(),
                 dtype_name(r.dtype), shape_to_string(r.shape).c_str(), where.c_str());
  }
  if (shown < recs.size()) std::fprintf(out, "  ... %zu more\n", recs.size() - shown);
}

}  // namespace

void print_compare_unmatched(std::FILE* out, const CompareResult& result, const TableOptions& options) {
  print_unmatched_side(out, result.unmatched_golden, "only in golden", options);
  print_unmatched_side(out, result.unmatched_target, "only in target", options);
}

void print_compare_problems(std::FILE* out, const CompareResult& result, const TableOptions& options) {
  if (result.problems.empty()) return;
  std::fprintf(out, "\n%s (%zu): could not be read, the rest was compared\n",
               paint("unreadable", "35", options.color).c_str(), result.problems.size());
  const size_t shown = options.limit > 0 ? std::min(result.problems.size(), static_cast<size_t>(options.limit))
                                         : result.problems.size();
  for (size_t i = 0; i < shown; ++i) {
    const bool golden = static_cast<int64_t>(i) < result.golden_problems;
    std::fprintf(out, "  %s: %s\n", golden ? "golden" : "target", terminal_text(result.problems[i].message()).c_str());
  }
  if (shown < result.problems.size()) std::fprintf(out, "  ... %zu more\n", result.problems.size() - shown);
}

void print_compare_notes(std::FILE* out, const CompareResult& result, const TableOptions& options) {
  for (const std::string& n : result.notes) std::fprintf(out, "%s %s\n", paint("note:", "2", options.color).c_str(), terminal_text(n).c_str());
}

// One part's error as the table spells rel L2, or n/a.
std::string shard_error_text(const ShardError& e) {
  char buf[32];
  if (std::isnan(e.rel_l2)) return e.label + " rel L2 " + std::string(kNoValueText);
  std::snprintf(buf, sizeof buf, "%.4g", e.rel_l2);
  return e.label + " rel L2 " + buf;
}

void print_compare_shards(std::FILE* out, const CompareReport& report, const TableOptions& options) {
  if (report.shards.empty()) return;
  std::fprintf(out, "%s\n", paint("Shards of failing rows (the parts the run held apart, worst first)", "1", options.color).c_str());
  const size_t shown = options.limit > 0 ? std::min(report.shards.size(), static_cast<size_t>(options.limit)) : report.shards.size();
  for (size_t i = 0; i < shown; ++i) {
    const RowShards& rs = report.shards[i];
    std::vector<ShardError> parts = rs.shards;
    std::stable_sort(parts.begin(), parts.end(), [](const ShardError& a, const ShardError& b) {
      return (std::isnan(b.rel_l2) ? -1.0 : b.rel_l2) < (std::isnan(a.rel_l2) ? -1.0 : a.rel_l2);
    });
    std::string line;
    for (const ShardError& e : parts) line += (line.empty() ? "" : " · ") + shard_error_text(e);
    std::fprintf(out, "  %s (%s): %s\n", terminal_text(report.result.rows[rs.row].golden->name).c_str(), rs.side.c_str(), line.c_str());
  }
  if (shown < report.shards.size()) std::fprintf(out, "  ... %zu more\n", report.shards.size() - shown);
}

void print_process_memory(std::FILE* out, const CompareResult& result, bool color) {
  if (result.peak_resident_bytes.size() < 2) return;
  std::string line = std::to_string(result.peak_resident_bytes.size()) + " processes, peak resident MiB:";
  for (int64_t b : result.peak_resident_bytes) line += " " + std::to_string((b + (1 << 19)) >> 20);
  std::fprintf(out, "%s %s\n", paint("memory:", "2", color).c_str(), line.c_str());
}

void print_compare_verdict(std::FILE* out, const CompareResult& result, double seconds,
                           const std::string& command, std::string_view headline, bool color) {
  const CompareSummary& s = result.summary;
  std::string counts = std::to_string(s.pass) + " pass, " + std::to_string(s.warn) + " warn, " +
                       std::to_string(s.fail) + " fail, " + std::to_string(s.error) + " error";
  if (s.unmatched_golden + s.unmatched_target > 0) {
    counts += ", " + std::to_string(s.unmatched_golden + s.unmatched_target) + " unmatched";
    if (s.unmatched_implementation > 0)
      counts += " (" + std::to_string(s.unmatched_implementation) + " implementation ops)";
  }
  if (s.problems > 0) counts += ", " + std::to_string(s.problems) + " unreadable";
  const char* sgr = headline == "PASSED" ? "1;32" : headline == "PASSED WITH WARNINGS" ? "1;33" : "1;31";
  std::fprintf(out, "%s | %s | %s | %.2fs | %s\n", paint(std::string(headline), sgr, color).c_str(), counts.c_str(),
               verdict_policy_name(result.policy), seconds, terminal_text(command).c_str());
}

}  // namespace parity::report
