// decode_manifest_record_fast / _reference (dump/manifest_record.h): one rule per key, read from either
// parser's values.
#include "dump/manifest_record.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "dump/event_json.h"
#include "parity/json_depth.h"

namespace parity::dump::detail {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- what each parser's values read as ---------------------------------------------------------------
// text: a string, else ""; integer: an integer (an unsigned one above INT64_MAX wraps, as the reader
// always read it), else none; number: any number, else NaN; members: an object's (key, value) pairs.

struct NlohmannValues {
  using Value = const nlohmann::json&;
  static bool is_object(Value v) { return v.is_object(); }
  static bool is_string(Value v) { return v.is_string(); }
  static std::string text(Value v) { return v.is_string() ? v.get<std::string>() : std::string(); }
  static std::optional<int64_t> integer(Value v) {
    return v.is_number_integer() ? std::optional<int64_t>(v.get<int64_t>()) : std::nullopt;
  }
  static double number(Value v) { return v.is_number() ? v.get<double>() : kNaN; }
  static std::vector<int64_t> integers(Value v, int64_t other) {
    std::vector<int64_t> out;
    if (v.is_array())
      for (const auto& d : v) out.push_back(integer(d).value_or(other));
    return out;
  }
  static std::optional<std::string> canonical_text(Value v) { return v.dump(); }
  template <typename Fn>
  static void members(Value v, Fn fn) {
    for (auto it = v.begin(); it != v.end(); ++it) fn(std::string_view(it.key()), it.value());
  }
};

struct SimdjsonValues {
  using Value = simdjson::dom::element;
  using Type = simdjson::dom::element_type;
  static bool is_object(Value v) { return v.type() == Type::OBJECT; }
  static bool is_string(Value v) { return v.type() == Type::STRING; }
  static std::string text(Value v) { return is_string(v) ? std::string(std::string_view(v)) : std::string(); }
  static std::optional<int64_t> integer(Value v) {
    if (v.type() == Type::INT64) return int64_t(v);
    if (v.type() == Type::UINT64) return static_cast<int64_t>(uint64_t(v));
    return std::nullopt;
  }
  static double number(Value v) {
    switch (v.type()) {
      case Type::INT64: return static_cast<double>(int64_t(v));
      case Type::UINT64: return static_cast<double>(uint64_t(v));
      case Type::DOUBLE: return double(v);
      default: return kNaN;
    }
  }
  static std::vector<int64_t> integers(Value v, int64_t other) {
    std::vector<int64_t> out;
    if (v.type() == Type::ARRAY)
      for (Value e : simdjson::dom::array(v)) out.push_back(integer(e).value_or(other));
    return out;
  }
  // Op arguments (rare): the text nlohmann writes, as the reader always kept it.
  static std::optional<std::string> canonical_text(Value v) {
    nlohmann::json a = nlohmann::json::parse(simdjson::minify(v), nullptr, false);
    return a.is_discarded() ? std::nullopt : std::optional<std::string>(a.dump());
  }
  template <typename Fn>
  static void members(Value v, Fn fn) {
    for (auto [key, value] : simdjson::dom::object(v)) fn(key, value);
  }
};

// ---- the reader's rule for each key (docs/dump-format.md "event record"); a key given twice keeps its
// last value, as nlohmann's parser keeps it ----------------------------------------------------------------

// "stats": stats_from_json's rules — doubles NaN and counts 0 unless given as numbers / integers.
template <typename F>
std::optional<TensorStats> stats(typename F::Value v) {
  if (!F::is_object(v)) return std::nullopt;
  TensorStats s = stats_from_json(nlohmann::json::object());
  F::members(v, [&s](std::string_view key, typename F::Value fv) {
    if (key == "min") s.min = F::number(fv);
    else if (key == "max") s.max = F::number(fv);
    else if (key == "mean") s.mean = F::number(fv);
    else if (key == "l2norm") s.l2norm = F::number(fv);
    else if (key == "absmax") s.absmax = F::number(fv);
    else if (key == "nan") s.nan_count = F::integer(fv).value_or(0);
    else if (key == "inf") s.inf_count = F::integer(fv).value_or(0);
    else if (key == "zero") s.zero_count = F::integer(fv).value_or(0);
    else if (key == "subnormal") s.subnormal_count = F::integer(fv).value_or(0);
    else if (key == "numel") s.numel = F::integer(fv).value_or(0);
  });
  return s;
}

// "data": where the tensor's bytes lie.
template <typename F>
void data(typename F::Value v, ManifestRecord& out) {
  out.has_data = F::is_object(v);
  out.shard.clear();
  out.offset.reset();
  out.nbytes.reset();
  if (!out.has_data) return;
  F::members(v, [&out](std::string_view key, typename F::Value fv) {
    if (key == "shard") out.shard = F::text(fv);
    else if (key == "offset") out.offset = F::integer(fv);
    else if (key == "nbytes") out.nbytes = F::integer(fv);
  });
}

// False only when the value cannot be read after all (the fast path then hands the record on).
template <typename F>
bool field(std::string_view key, typename F::Value v, ManifestRecord& out) {
  if (key == "kind") out.kind = F::text(v);
  else if (key == "schema") out.schema = F::text(v);
  else if (key == "name") out.name = F::text(v);
  else if (key == "module") out.module = F::text(v);
  else if (key == "op") out.op = F::text(v);
  else if (key == "direction") out.direction = F::text(v);
  else if (key == "role") out.role = F::text(v);
  else if (key == "dtype") out.dtype = F::text(v);
  else if (key == "device") out.device = F::text(v);
  else if (key == "index") out.index = F::integer(v);
  else if (key == "step") out.step = F::integer(v);
  else if (key == "rank") out.rank = F::integer(v);
  else if (key == "order") out.order = F::integer(v);
  else if (key == "shape") out.shape = F::integers(v, -1);
  else if (key == "stride") out.stride = F::integers(v, 0);
  else if (key == "stats") out.stats = stats<F>(v);
  else if (key == "data") data<F>(v, out);
  else if (key == "crc32c") out.crc32c = F::is_string(v) ? std::optional<std::string>(F::text(v)) : std::nullopt;
  else if (key == "args") {
    out.args = F::canonical_text(v);
    if (!out.args) return false;
  }
  return true;  // or a key the reader does not use
}

template <typename F>
bool fields(typename F::Value record, ManifestRecord& out) {
  out = ManifestRecord{};
  bool ok = true;
  F::members(record, [&](std::string_view key, typename F::Value v) { ok = field<F>(key, v, out) && ok; });
  return ok;
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

}  // namespace

bool decode_manifest_record_fast(const std::string& payload, ManifestRecord& out) {
  // (Without padding after it, simdjson copies the record into its own reused buffer: no allocation.)
  simdjson::dom::parser& parser = thread_parser();
  if (parser.max_depth() != kFastMaxDepth) return false;
  simdjson::dom::element doc;
  if (parser.parse(payload).get(doc) || doc.type() != simdjson::dom::element_type::OBJECT) return false;
  return fields<SimdjsonValues>(doc, out);
}

bool decode_manifest_record_reference(const std::string& payload, ManifestRecord& out) {
  nlohmann::json j = nlohmann::json::parse(payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  return fields<NlohmannValues>(j, out);
}

}  // namespace parity::dump::detail
