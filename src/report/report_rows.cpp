// src/report/report_rows.cpp — the rows a report keeps of a large comparison (report/report_rows.h).
#include "report/report_rows.h"

#include <array>
#include <limits>
#include <utility>

#include "report/tree_index.h"
#include "parity/schemas.h"

namespace parity::report_rows {

using nlohmann::json;

RowOrderKey row_order_key(const RowSeverity& s, size_t index) {
  return {!s.first_divergence, -s.verdict, -s.ratio, index};
}

int verdict_rank(std::string_view v) {
  static const std::array<std::string_view, 4> order = {"pass", "warn", "fail", "error"};
  for (size_t k = 0; k < order.size(); ++k)
    if (v == order[k]) return static_cast<int>(k);
  return 0;
}

RowSeverity json_row_severity(const json& row, std::string_view first_name) {
  RowSeverity s;
  if (!row.is_object()) return s;
  if (const auto it = row.find("name"); !first_name.empty() && it != row.end() && it->is_string())
    s.first_divergence = it->get_ref<const std::string&>() == first_name;
  if (const auto it = row.find("verdict"); it != row.end() && it->is_string())
    s.verdict = verdict_rank(it->get_ref<const std::string&>());
  // The JSON encoding of a ratio: a number, or the strings "Infinity" / "-Infinity" / "NaN"; only
  // "Infinity" ranks above -1.
  if (const auto it = row.find("noise_ratio"); it != row.end()) {
    if (it->is_number()) s.ratio = it->get<double>();
    else if (it->is_string() && *it == "Infinity") s.ratio = std::numeric_limits<double>::infinity();
  }
  return s;
}

std::string first_divergence_name(const json& result) {
  if (!result.is_object()) return {};
  const auto fd = result.find("first_divergence");
  if (fd == result.end() || !fd->is_object()) return {};
  const auto name = fd->find("name");
  return name != fd->end() && name->is_string() ? name->get<std::string>() : std::string();
}

bool is_compare_result(const json& result) {
  if (!result.is_object()) return false;
  const auto it = result.find("schema");
  return it != result.end() && it->is_string() && it->get_ref<const std::string&>().rfind(schemas::family(schemas::kCompare), 0) == 0;
}

WorstRowsSelection::WorstRowsSelection(size_t max_rows, std::string first_name)
    : max_rows_(max_rows), keep_all_(max_rows == 0), first_name_(std::move(first_name)) {}

void WorstRowsSelection::add(json row) {
  const size_t index = seen_++;
  if (keep_all_) {
    all_.push_back(std::move(row));
    return;
  }
  const RowOrderKey key = row_order_key(json_row_severity(row, first_name_), index);
  if (heap_.size() == max_rows_) {
    // Full: the new row replaces the least severe kept row only when it ranks before it (an equal
    // severity never does: its index is larger).
    if (!(key < heap_.front().key)) return;
    std::pop_heap(heap_.begin(), heap_.end(), kept_before);
    heap_.pop_back();
  }
  heap_.push_back({key, std::move(row)});
  std::push_heap(heap_.begin(), heap_.end(), kept_before);
}

json WorstRowsSelection::take_rows(std::vector<size_t>* indices) {
  json rows = json::array();
  if (keep_all_) {
    for (json& r : all_) {
      if (indices) indices->push_back(rows.size());
      rows.push_back(std::move(r));
    }
    all_.clear();
    return rows;
  }
  std::sort(heap_.begin(), heap_.end(),
            [](const Kept& a, const Kept& b) { return std::get<3>(a.key) < std::get<3>(b.key); });
  for (Kept& k : heap_) {
    if (indices) indices->push_back(std::get<3>(k.key));
    rows.push_back(std::move(k.row));
  }
  heap_.clear();
  return rows;
}

void mark_trimmed(json& out, size_t shown, size_t total) {
  const std::string rule = "the worst rows by verdict, then noise ratio, and the first divergence";
  out["report_rows"] = {{"shown", shown}, {"total", total}, {"rule", rule}};
  if (!out.contains("notes") || !out["notes"].is_array()) out["notes"] = json::array();
  out["notes"].push_back("this report shows " + std::to_string(shown) + " of " + std::to_string(total) +
                         " rows (" + rule + "); every row is in the --json and --csv output");
}

json trim_compare_rows(const json& result, size_t max_rows) {
  const json& rows = result["rows"];
  const std::string first_name = first_divergence_name(result);
  const std::vector<size_t> kept_rows =
      worst_rows(rows.size(), max_rows, [&](size_t i) { return json_row_severity(rows[i], first_name); });
  json out = json::object();
  for (const auto& [k, v] : result.items()) {
    if (k == "rows") continue;
    out[k] = v;
  }
  json kept = json::array();
  for (size_t i : kept_rows) kept.push_back(rows[i]);
  out["rows"] = std::move(kept);
  mark_trimmed(out, max_rows, rows.size());
  TreeIndexBuilder index;
  for (const json& row : rows) index.add(row);
  attach_tree_index(out, index, kept_rows);
  return out;
}

}  // namespace parity::report_rows
