// decode_manifest_record (dump/manifest_record.h): simdjson for well-formed records, nlohmann otherwise.
#include "dump/manifest_record.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "dump/event_json.h"
#include "parity/json_depth.h"

namespace parity::dump::detail {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- nlohmann: the reference, and the path of every record simdjson does not accept ------------------

std::string string_or_empty(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : std::string(); }

std::optional<int64_t> integer(const nlohmann::json& v) {
  if (!v.is_number_integer()) return std::nullopt;
  return v.get<int64_t>();  // an unsigned value above INT64_MAX wraps, as the reader always read it
}

void integers(const nlohmann::json& v, int64_t other, std::vector<int64_t>& out) {
  out.clear();
  if (!v.is_array()) return;
  for (const auto& d : v) out.push_back(d.is_number_integer() ? d.get<int64_t>() : other);
}

bool decode_nlohmann(const std::string& payload, ManifestRecord& out) {
  nlohmann::json j = nlohmann::json::parse(payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  out = ManifestRecord{};
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "kind") out.kind = string_or_empty(v);
    else if (key == "schema") out.schema = string_or_empty(v);
    else if (key == "name") out.name = string_or_empty(v);
    else if (key == "module") out.module = string_or_empty(v);
    else if (key == "op") out.op = string_or_empty(v);
    else if (key == "direction") out.direction = string_or_empty(v);
    else if (key == "role") out.role = string_or_empty(v);
    else if (key == "dtype") out.dtype = string_or_empty(v);
    else if (key == "device") out.device = string_or_empty(v);
    else if (key == "index") out.index = integer(v);
    else if (key == "step") out.step = integer(v);
    else if (key == "rank") out.rank = integer(v);
    else if (key == "order") out.order = integer(v);
    else if (key == "shape") integers(v, -1, out.shape);
    else if (key == "stride") integers(v, 0, out.stride);
    else if (key == "args") out.args = v.dump();
    else if (key == "stats") out.stats = v.is_object() ? std::optional<TensorStats>(stats_from_json(v)) : std::nullopt;
    else if (key == "crc32c") out.crc32c = v.is_string() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt;
    else if (key == "data") {
      out.has_data = v.is_object();
      out.shard = out.has_data && v.contains("shard") ? string_or_empty(v["shard"]) : std::string();
      out.offset = out.has_data && v.contains("offset") ? integer(v["offset"]) : std::nullopt;
      out.nbytes = out.has_data && v.contains("nbytes") ? integer(v["nbytes"]) : std::nullopt;
    }
  }
  return true;
}

// ---- simdjson (DOM: validates the whole record, as nlohmann does) ------------------------------------
using simdjson::dom::element;
using simdjson::dom::element_type;

std::string string_or_empty(element v) {
  return v.type() == element_type::STRING ? std::string(std::string_view(v)) : std::string();
}

// An integer as nlohmann's is_number_integer / get<int64_t> read it; nullopt for any other value.
std::optional<int64_t> integer(element v) {
  if (v.type() == element_type::INT64) return int64_t(v);
  if (v.type() == element_type::UINT64) return static_cast<int64_t>(uint64_t(v));
  return std::nullopt;
}

double number_or_nan(element v) {
  switch (v.type()) {
    case element_type::INT64: return static_cast<double>(int64_t(v));
    case element_type::UINT64: return static_cast<double>(uint64_t(v));
    case element_type::DOUBLE: return double(v);
    default: return kNaN;
  }
}

void integers(element v, int64_t other, std::vector<int64_t>& out) {
  out.clear();
  if (v.type() != element_type::ARRAY) return;
  for (element e : simdjson::dom::array(v)) out.push_back(integer(e).value_or(other));
}

// stats_from_json's rules: doubles NaN and counts 0 unless given as numbers / integers.
std::optional<TensorStats> stats(element v) {
  if (v.type() != element_type::OBJECT) return std::nullopt;
  TensorStats s = stats_from_json(nlohmann::json::object());
  for (auto [key, fv] : simdjson::dom::object(v)) {
    if (key == "min") s.min = number_or_nan(fv);
    else if (key == "max") s.max = number_or_nan(fv);
    else if (key == "mean") s.mean = number_or_nan(fv);
    else if (key == "l2norm") s.l2norm = number_or_nan(fv);
    else if (key == "absmax") s.absmax = number_or_nan(fv);
    else if (key == "nan") s.nan_count = integer(fv).value_or(0);
    else if (key == "inf") s.inf_count = integer(fv).value_or(0);
    else if (key == "zero") s.zero_count = integer(fv).value_or(0);
    else if (key == "subnormal") s.subnormal_count = integer(fv).value_or(0);
    else if (key == "numel") s.numel = integer(fv).value_or(0);
  }
  return s;
}

void data(element v, ManifestRecord& out) {
  out.has_data = v.type() == element_type::OBJECT;
  out.shard.clear();
  out.offset.reset();
  out.nbytes.reset();
  if (!out.has_data) return;
  for (auto [key, fv] : simdjson::dom::object(v)) {
    if (key == "shard") out.shard = string_or_empty(fv);
    else if (key == "offset") out.offset = integer(fv);
    else if (key == "nbytes") out.nbytes = integer(fv);
  }
}

// False only when the record must go to nlohmann after all.
bool field(std::string_view key, element v, ManifestRecord& out) {
  if (key == "kind") out.kind = string_or_empty(v);
  else if (key == "schema") out.schema = string_or_empty(v);
  else if (key == "name") out.name = string_or_empty(v);
  else if (key == "module") out.module = string_or_empty(v);
  else if (key == "op") out.op = string_or_empty(v);
  else if (key == "direction") out.direction = string_or_empty(v);
  else if (key == "role") out.role = string_or_empty(v);
  else if (key == "dtype") out.dtype = string_or_empty(v);
  else if (key == "device") out.device = string_or_empty(v);
  else if (key == "index") out.index = integer(v);
  else if (key == "step") out.step = integer(v);
  else if (key == "rank") out.rank = integer(v);
  else if (key == "order") out.order = integer(v);
  else if (key == "shape") integers(v, -1, out.shape);
  else if (key == "stride") integers(v, 0, out.stride);
  else if (key == "stats") out.stats = stats(v);
  else if (key == "data") data(v, out);
  else if (key == "crc32c") out.crc32c = v.type() == element_type::STRING ? std::optional<std::string>(string_or_empty(v)) : std::nullopt;
  else if (key == "args") {  // rare (op events): the text nlohmann writes, as the reader always kept it
    nlohmann::json a = nlohmann::json::parse(simdjson::minify(v), nullptr, false);
    if (a.is_discarded()) return false;
    out.args = a.dump();
  }
  return true;  // or a key the reader does not use
}

// simdjson refuses deeper records (DEPTH_ERROR), which then go to the reference path and its depth check
// (parity/json_depth.h): one level under kMaxJsonDepth, so that whatever simdjson counts as a level,
// a record it accepts is within the limit.
constexpr size_t kFastMaxDepth = kMaxJsonDepth - 1;

simdjson::dom::parser& thread_parser() {  // the listing reads parts on several threads
  thread_local simdjson::dom::parser parser;
  thread_local const bool ready = parser.allocate(1 << 16, kFastMaxDepth) == simdjson::SUCCESS;
  (void)ready;
  return parser;
}

bool decode_simdjson(std::string& payload, ManifestRecord& out) {
  payload.reserve(payload.size() + simdjson::SIMDJSON_PADDING);  // parsed in place, not copied
  simdjson::dom::parser& parser = thread_parser();
  if (parser.max_depth() != kFastMaxDepth) return false;
  element doc;
  if (parser.parse(payload).get(doc) || doc.type() != element_type::OBJECT) return false;
  out = ManifestRecord{};
  for (auto [key, v] : simdjson::dom::object(doc))
    if (!field(key, v, out)) return false;
  return true;
}

}  // namespace

bool decode_manifest_record_fast(std::string& payload, ManifestRecord& out) { return decode_simdjson(payload, out); }

bool decode_manifest_record_reference(const std::string& payload, ManifestRecord& out) {
  return decode_nlohmann(payload, out);
}

}  // namespace parity::dump::detail
