// src/report/report_rows.h — which rows of a large comparison an HTML report embeds
// (HtmlReportOptions::max_rows), one rule for every path that chooses them: a live CompareReport
// (compare_report_for_html), a parsed result (trim_compare_rows) and a result read row by row from its
// file (load_result_for_report, src/report/result_stream.cpp).
//
// The rule: rows named like the first divergence first, then by verdict (error, fail, warn, pass), then
// by noise ratio (largest first; +inf above every number, NaN, -inf and a missing ratio as -1), then in
// order. The kept rows are emitted in their original order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace parity::report_rows {

// What the rule looks at in one row.
struct RowSeverity {
  bool first_divergence = false;  // named like the run's first divergence
  int verdict = 0;                // verdict_rank: pass 0, warn 1, fail 2, error 3
  double ratio = -1;              // noise ratio; NaN, -inf and a missing ratio read as -1
};

// Smaller keys are kept first. The index makes every key distinct, so the kept set is the same whatever
// algorithm picks the smallest keys (a partial sort of all rows, or a bounded heap fed row by row).
using RowOrderKey = std::tuple<bool, int, double, size_t>;
RowOrderKey row_order_key(const RowSeverity& severity, size_t index);

// 0..3 for "pass", "warn", "fail", "error"; 0 for anything else.
int verdict_rank(std::string_view verdict);

// The severity of one row as `parity compare --json` writes it (noise_ratio a number or one of the strings
// "Infinity", "-Infinity", "NaN"); a row that is not an object has the lowest severity.
RowSeverity json_row_severity(const nlohmann::json& row, std::string_view first_divergence_name);

// first_divergence.name of a result, "" when there is none (null, not an object, or no name string).
std::string first_divergence_name(const nlohmann::json& result);

// Whether `result` has the schema "parity.compare/<n>" (the only results whose rows a report trims).
bool is_compare_result(const nlohmann::json& result);

// The indices, in order, of the `max_rows` (< n) rows the rule keeps; `severity(i)` gives row i's
// RowSeverity.
template <typename Severity>
std::vector<size_t> worst_rows(size_t n, size_t max_rows, Severity severity) {
  std::vector<RowOrderKey> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = row_order_key(severity(i), i);
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = i;
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(max_rows), idx.end(),
                    [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  idx.resize(max_rows);
  std::sort(idx.begin(), idx.end());
  return idx;
}

// The same selection fed one JSON row at a time, holding at most `max_rows` rows: what a report keeps of
// a result file without the file's rows ever existing together in memory.
class WorstRowsSelection {
 public:
  // max_rows 0 keeps every row (no cap).
  WorstRowsSelection(size_t max_rows, std::string first_divergence_name);

  void add(nlohmann::json row);
  size_t seen() const { return seen_; }
  size_t kept() const { return keep_all_ ? all_.size() : heap_.size(); }
  const std::string& first_divergence_name() const { return first_name_; }
  // The kept rows in their original order (their indices, ascending, into `indices` when given); the
  // selection is empty afterwards.
  nlohmann::json take_rows(std::vector<size_t>* indices = nullptr);

 private:
  struct Kept {
    RowOrderKey key;
    nlohmann::json row;
  };
  static bool kept_before(const Kept& a, const Kept& b) { return a.key < b.key; }

  size_t max_rows_;
  bool keep_all_;
  std::string first_name_;
  size_t seen_ = 0;
  std::vector<Kept> heap_;           // max-heap on the key: the front is the first row to give up
  std::vector<nlohmann::json> all_;  // keep_all_: every row, in order
};

// What a trimmed result says of itself: "report_rows" {shown, total, rule} and a note.
void mark_trimmed(nlohmann::json& result, size_t shown, size_t total);

// A parsed compare result with more than `max_rows` rows reduced to the rows the rule keeps, marked;
// every other key as it is.
nlohmann::json trim_compare_rows(const nlohmann::json& result, size_t max_rows);

}  // namespace parity::report_rows
