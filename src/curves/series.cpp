// src/curves/series.cpp — the point accumulator shared by the readers, number parsing, and the
// lookup helpers of CurveRun.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "curves/readers.h"

namespace parity::curves {

namespace detail {

void SeriesBuilder::add(const std::string& raw_metric, int rank, int64_t step, double value) {
  std::string metric = canonical_metric(raw_metric);
  auto& points = data_[{metric, rank}];
  auto [it, inserted] = points.insert_or_assign(step, value);
  if (!inserted) ++repeated_[metric];
  ++points_;
}

void SeriesBuilder::finish(CurveRun& run) {
  for (auto& [key, points] : data_) {
    Series s;
    s.metric = std::get<0>(key);
    s.rank = std::get<1>(key);
    s.steps.reserve(points.size());
    s.values.reserve(points.size());
    for (const auto& [step, value] : points) {
      s.steps.push_back(step);
      s.values.push_back(value);
    }
    run.series.push_back(std::move(s));
  }
  for (const auto& [metric, n] : repeated_)
    run.notes.push_back(fmt::format("{}: {} repeated step(s); the last value logged for a step is used",
                                    metric, n));
  data_.clear();
  repeated_.clear();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool parse_number(std::string_view text, double& out) {
  text = trim(text);
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front())
    text = trim(text.substr(1, text.size() - 2));
  if (text.empty()) return false;
  std::string lower;
  for (char c : text) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  bool neg = false;
  std::string_view body = lower;
  if (!body.empty() && (body.front() == '-' || body.front() == '+')) {
    neg = body.front() == '-';
    body.remove_prefix(1);
  }
  if (body == "nan") { out = std::numeric_limits<double>::quiet_NaN(); return true; }
  if (body == "inf" || body == "infinity") {
    out = neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return true;
  }
  // from_chars does not accept a leading '+'.
  std::string_view num = text;
  if (!num.empty() && num.front() == '+') num.remove_prefix(1);
  const char* end = num.data() + num.size();
  auto [ptr, ec] = std::from_chars(num.data(), end, out);
  return ec == std::errc() && ptr == end;
}

bool step_from_double(double v, int64_t& out) {
  // 2^63 is exactly representable; every double below it converts without overflow.
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return false;
  out = static_cast<int64_t>(v);
  return true;
}

bool rank_from_double(double v, int& out) {
  if (!(v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max())) return false;
  out = static_cast<int>(v);
  return true;
}

bool parse_step(std::string_view digits, int64_t& out) {
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  return ec == std::errc() && ptr == digits.data() + digits.size();
}

bool parse_rank(std::string_view digits, int& out) {
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  return ec == std::errc() && ptr == digits.data() + digits.size();
}

}  // namespace detail

const Series* CurveRun::find(std::string_view metric, int rank) const {
  const Series* lowest = nullptr;
  for (const Series& s : series) {
    if (s.metric != metric) continue;
    if (s.rank == rank) return &s;
    if (rank == -1 && (lowest == nullptr || s.rank < lowest->rank)) lowest = &s;
  }
  return rank == -1 ? lowest : nullptr;
}

std::vector<std::string> CurveRun::metrics() const {
  std::set<std::string> names;
  for (const Series& s : series) names.insert(s.metric);
  return {names.begin(), names.end()};
}

std::vector<int> CurveRun::ranks() const {
  std::set<int> r;
  for (const Series& s : series)
    if (s.rank >= 0) r.insert(s.rank);
  return {r.begin(), r.end()};
}

}  // namespace parity::curves
