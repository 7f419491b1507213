// src/dump/manifest_record.h — one manifest record as the reader sees it (docs/dump-format.md).
//
// A million-event run has a million records to decode; building nlohmann's tree for each (a std::map per
// object) was most of the listing's time. decode_manifest_record reads a well-formed record with
// simdjson's on-demand parser, and hands anything simdjson does not accept (a syntax error, invalid
// UTF-8, bytes after the object, a number it cannot represent) to nlohmann's parser, so that a damaged
// record is judged exactly as before. Both fill the same struct by the same rules: a field that is
// absent or of another JSON type reads as absent, and a key given twice keeps its last value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "parity/dump.h"

namespace parity::dump::detail {

struct ManifestRecord {
  std::string kind, schema;  // "" when absent or not a string (as every string below)
  std::string name, module, op, direction, role, dtype, device;
  std::optional<int64_t> index, step, rank, order;  // integers only
  std::vector<int64_t> shape;   // "shape" array; an element that is not an integer reads -1
  std::vector<int64_t> stride;  // "stride" array; an element that is not an integer reads 0
  std::optional<std::string> args;     // "args" of any type, re-serialized (nlohmann's dump)
  std::optional<TensorStats> stats;    // "stats" when an object (stats_from_json's rules)
  std::optional<std::string> crc32c;   // when a string
  bool has_data = false;               // "data" is an object:
  std::string shard;                   //   its "shard"
  std::optional<int64_t> offset, nbytes;
};

// False when `payload` is not one JSON object. `payload` may grow its capacity (simdjson reads a few
// bytes past the end of its input).
bool decode_manifest_record(std::string& payload, ManifestRecord& out);

// Each path alone, for the tests: simdjson's (false also when it hands the record on) and nlohmann's,
// the reference it is tested against.
bool decode_manifest_record_fast(std::string& payload, ManifestRecord& out);
bool decode_manifest_record_reference(const std::string& payload, ManifestRecord& out);

}  // namespace parity::dump::detail
