// src/report/tree_index.h — the model tree's index of every row of a comparison whose rows a report
// trims (docs/report.md "Model tree" and "Data envelope"): the report embeds at most max_rows full
// rows, but the tree (web/src/tree.js) must place and colour every record, so the result carries
// "report_tree", a compact columnar summary of each row — what the tree reads and nothing else.
//
// Fed one JSON row at a time (as `parity compare --json` writes a row), so every path that trims rows
// builds it the same way, the streaming loader included, without the rows existing together: memory is
// a few numbers a row plus the distinct strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace parity::report_rows {

class TreeIndexBuilder {
 public:
  void add(const nlohmann::json& row);
  size_t size() const { return head_.size(); }
  // The "report_tree" object (schema parity.report-tree/2); `kept` are the indices, ascending, of the
  // rows the report embeds. The builder is empty afterwards.
  nlohmann::json take(const std::vector<size_t>& kept);

 private:
  int32_t intern(const nlohmann::json& row, const char* key);
  int32_t intern(const std::string& s);
  void add_nonfinite(const nlohmann::json& row, size_t index);
  void add_site(const nlohmann::json& row);

  std::deque<std::string> strings_;                          // a deque: the map's views stay valid
  std::unordered_map<std::string_view, int32_t> string_ids_;  // views into strings_
  std::vector<int32_t> head_, tail_, module_, role_, direction_;
  std::vector<int32_t> event_, site_module_, site_op_;  // rows[].event, rows[].site (string ids)
  std::vector<int64_t> site_call_;
  std::vector<int8_t> verdict_;
  std::vector<double> noise_ratio_;  // NaN: none (written as null); +inf written "Infinity"
  std::vector<int64_t> order_, target_order_, rank_, step_;
  nlohmann::json nonfinite_rows_ = nlohmann::json::array();
  nlohmann::json nonfinite_golden_ = nlohmann::json::array();
  nlohmann::json nonfinite_target_ = nlohmann::json::array();
};

// Adds `index` as result["report_tree"].
void attach_tree_index(nlohmann::json& result, TreeIndexBuilder& index, const std::vector<size_t>& kept);

}  // namespace parity::report_rows
