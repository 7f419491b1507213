#include "dump/event_json.h"

#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "parity/json_depth.h"

namespace parity::dump::detail {
namespace {
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
double get_num(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::numeric_limits<double>::quiet_NaN();
  return it->get<double>();
}
int64_t get_int(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return (it != j.end() && it->is_number_integer()) ? it->get<int64_t>() : 0;
}
}  // namespace

nlohmann::json stats_to_json(const TensorStats& s) {
  return {{"min", num(s.min)},         {"max", num(s.max)},      {"mean", num(s.mean)},
          {"l2norm", num(s.l2norm)},   {"absmax", num(s.absmax)}, {"nan", s.nan_count},
          {"inf", s.inf_count},        {"zero", s.zero_count},   {"subnormal", s.subnormal_count},
          {"numel", s.numel}};
}

TensorStats stats_from_json(const nlohmann::json& j) {
  TensorStats s;
  s.min = get_num(j, "min");
  s.max = get_num(j, "max");
  s.mean = get_num(j, "mean");
  s.l2norm = get_num(j, "l2norm");
  s.absmax = get_num(j, "absmax");
  s.nan_count = get_int(j, "nan");
  s.inf_count = get_int(j, "inf");
  s.zero_count = get_int(j, "zero");
  s.subnormal_count = get_int(j, "subnormal");
  s.numel = get_int(j, "numel");
  return s;
}

std::string crc_hex(uint32_t v) { return fmt::format("{:08x}", v); }

nlohmann::json event_to_json(const EventMeta& m, int rank, const nlohmann::json& data) {
  nlohmann::json j = {{"kind", "event"},    {"name", m.name},
                      {"module", m.module}, {"op", m.op},
                      {"call", m.call},     {"direction", m.direction},
                      {"role", m.role},     {"index", m.index},
                      {"step", m.step},     {"rank", rank},
                      {"order", m.order},   {"dtype", dtype_name(m.dtype)},
                      {"shape", m.shape},   {"stride", m.stride},
                      {"device", m.device}};
  if (m.stats) j["stats"] = stats_to_json(*m.stats);
  if (m.crc32c) j["crc32c"] = crc_hex(*m.crc32c);
  if (!data.is_null()) j["data"] = data;
  // Malformed caller JSON is kept as a string rather than dropped or allowed to break the record.
  auto embed = [&j](const char* key, const std::string& text) {
    if (text.empty()) return;
    nlohmann::json v = json_depth_problem(text).empty() ? nlohmann::json::parse(text, nullptr, false)
                                                        : nlohmann::json(nlohmann::json::value_t::discarded);
    j[key] = v.is_discarded() ? nlohmann::json(text) : std::move(v);
  };
  embed("args", m.args_json);
  embed("extra", m.extra_json);
  return j;
}

}  // namespace parity::dump::detail
