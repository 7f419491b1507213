// src/report/tree_index.cpp — the model tree's index of every row (report/tree_index.h).
#include "report/tree_index.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "parity/schemas.h"

namespace parity::report_rows {

namespace {

using nlohmann::json;

const json* member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// A finite number, rounded to 4 significant digits (the tree shows 3), else NaN: the report's reading of
// a ratio or metric (P.isNum in web/src/util.js): strings such as "Infinity" and "NaN" are not numbers.
double finite4(const json* v) {
  if (v == nullptr || !v->is_number()) return std::numeric_limits<double>::quiet_NaN();
  const double x = v->get<double>();
  if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return std::strtod(buf, nullptr);
}

// An integer field as P.int reads it: a finite number, else `dflt`.
int64_t integer(const json& row, const char* key, int64_t dflt) {
  const json* v = member(row, key);
  if (v == nullptr || !v->is_number()) return dflt;
  if (v->is_number_integer()) return v->get<int64_t>();
  const double x = v->get<double>();
  return std::isfinite(x) ? static_cast<int64_t>(x) : dflt;
}

// The verdict's severity as the page ranks it (P.severity: pass 0, warn 1, fail 2, anything else 3).
int8_t severity(const json& row) {
  const json* v = member(row, "verdict");
  if (v == nullptr || !v->is_string()) return 3;
  const std::string& s = v->get_ref<const std::string&>();
  return s == "pass" ? 0 : s == "warn" ? 1 : s == "fail" ? 2 : 3;
}

// One side's non-finite statistics, [nan_count, pinf_count, ninf_count, inf_count, min, max] (null where
// the row has none): what the page's NaN/Inf chain and its intended-mask rule read (web/src/overflow.js).
json side_stats(const json& row, const std::string& side) {
  const json* metrics = member(row, "metrics");
  const json* st = metrics && metrics->is_object() ? member(*metrics, (side + "_stats").c_str())
                                                   : (member(row, "stats") ? member(*member(row, "stats"), side.c_str()) : nullptr);
  json out = json::array();
  for (const char* k : {"nan_count", "pinf_count", "ninf_count", "inf_count", "min", "max"}) {
    const json* v = st ? member(*st, k) : nullptr;
    out.push_back(v ? *v : json());
  }
  return out;
}

bool any_count(const json& stats) {
  for (size_t k = 0; k < 4; ++k)
    if (stats[k].is_number() && stats[k].get<double>() > 0) return true;
  return false;
}

// Noise ratios: null where the row has none, "Infinity" (the spelling of every parity JSON) where it is
// infinite — a difference where the golden is exactly zero.
json ratios_json(const std::vector<double>& xs) {
  json out = json::array();
  for (double x : xs) out.push_back(std::isnan(x) ? json() : std::isinf(x) ? json("Infinity") : json(x));
  return out;
}

// A row's noise ratio as the compare JSON carries it (a number, or "Infinity"), 4 significant digits;
// NaN when it has none.
double noise_ratio_of(const json* v) {
  if (v != nullptr && v->is_string() && v->get_ref<const std::string&>() == "Infinity") return std::numeric_limits<double>::infinity();
  return finite4(v);
}

// An integer column: its values, or with `delta` each value less the previous one (the first less 0);
// then, when shorter, {"runs": [v, k, ...]} for k copies of v in turn. Most columns are long runs (a
// module's rows, one rank, one step) or, delta-coded, runs of 1 (execution order).
template <typename T>
json column(std::vector<T>& values, bool delta) {
  std::vector<int64_t> v(values.begin(), values.end());
  std::vector<T>().swap(values);  // released as soon as it is copied: the page's text is built next
  if (delta)
    for (size_t i = v.size(); i-- > 1;) v[i] -= v[i - 1];
  std::vector<int64_t> runs;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!runs.empty() && runs[runs.size() - 2] == v[i]) ++runs.back();
    else runs.insert(runs.end(), {v[i], 1});
  }
  if (runs.size() < v.size()) return {{"runs", runs}};
  return v;
}

}  // namespace

int32_t TreeIndexBuilder::intern(const std::string& s) {
  if (const auto it = string_ids_.find(s); it != string_ids_.end()) return it->second;
  const auto id = static_cast<int32_t>(strings_.size());
  string_ids_.emplace(strings_.emplace_back(s), id);
  return id;
}

int32_t TreeIndexBuilder::intern(const json& row, const char* key) {
  const json* v = member(row, key);
  return v != nullptr && v->is_string() ? intern(v->get_ref<const std::string&>()) : -1;
}

void TreeIndexBuilder::add_nonfinite(const json& row, size_t index) {
  json golden = side_stats(row, "golden"), target = side_stats(row, "target");
  if (!any_count(golden) && !any_count(target)) return;
  nonfinite_rows_.push_back(index);
  nonfinite_golden_.push_back(std::move(golden));
  nonfinite_target_.push_back(std::move(target));
}

// The row's event and its place in the model (rows[].site, revision 1.8): what the tree is built from.
// A row without them (a result of an older revision) has no event, its module as its place, call 0, no op.
void TreeIndexBuilder::add_site(const json& row) {
  event_.push_back(intern(row, "event"));
  const json* site = member(row, "site");
  if (site == nullptr || !site->is_object()) {
    site_module_.push_back(intern(row, "module"));
    site_call_.push_back(0);
    site_op_.push_back(-1);
    return;
  }
  site_module_.push_back(intern(*site, "module"));
  site_call_.push_back(integer(*site, "call", 0));
  site_op_.push_back(intern(*site, "op"));
}

void TreeIndexBuilder::add(const json& row) {
  const size_t index = size();
  // The name in two interned halves, split at its first '/': capture names share both ("model.layers.3.mlp"
  // and "up_proj/forward/output/0" recur), so the page carries each distinct half once.
  const json* name = member(row, "name");
  const std::string_view n = name && name->is_string() ? std::string_view(name->get_ref<const std::string&>()) : "";
  const size_t slash = n.find('/');
  head_.push_back(intern(std::string(n.substr(0, slash))));
  tail_.push_back(slash == std::string_view::npos ? -1 : intern(std::string(n.substr(slash + 1))));
  module_.push_back(intern(row, "module"));
  add_site(row);
  role_.push_back(intern(row, "role"));
  direction_.push_back(intern(row, "direction"));
  add_nonfinite(row, index);
  verdict_.push_back(severity(row));
  noise_ratio_.push_back(noise_ratio_of(member(row, "noise_ratio")));
  order_.push_back(integer(row, "order", static_cast<int64_t>(index)));
  target_order_.push_back(integer(row, "target_order", -1));
  rank_.push_back(integer(row, "rank", -1));
  step_.push_back(integer(row, "step", -1));
}

json TreeIndexBuilder::take(const std::vector<size_t>& kept) {
  // Each part is released as it becomes JSON, so the index is never held twice over.
  string_ids_ = {};
  json strings = json::array();
  for (std::string& str : strings_) strings.push_back(std::move(str));
  strings_ = {};
  json out = {{"schema", schemas::kReportTree.id}, {"rows", size()}, {"kept", kept}};
  out["strings"] = std::move(strings);
  out["head"] = column(head_, false);
  out["tail"] = column(tail_, false);
  out["module"] = column(module_, false);
  out["event"] = column(event_, false);
  out["site_module"] = column(site_module_, false);
  out["site_call"] = column(site_call_, false);
  out["site_op"] = column(site_op_, false);
  out["role"] = column(role_, false);
  out["direction"] = column(direction_, false);
  out["verdict"] = column(verdict_, false);
  out["noise_ratio"] = ratios_json(noise_ratio_);
  out["order"] = column(order_, true);
  out["target_order"] = column(target_order_, true);
  out["rank"] = column(rank_, false);
  out["step"] = column(step_, false);
  out["nonfinite"] = {{"row", std::move(nonfinite_rows_)}, {"golden", std::move(nonfinite_golden_)}, {"target", std::move(nonfinite_target_)}};
  *this = TreeIndexBuilder();
  return out;
}

void attach_tree_index(json& result, TreeIndexBuilder& index, const std::vector<size_t>& kept) {
  result["report_tree"] = index.take(kept);
}

}  // namespace parity::report_rows
