// src/dump/manifest_record.h — one manifest record as the reader sees it (docs/dump-format.md).
//
// A million-event run has a million records to decode; building nlohmann's tree for each (a std::map per
// object) was most of the listing's time. The reader decodes a well-formed record with simdjson's DOM
// parser (which validates all of it, as nlohmann does), and hands anything simdjson does not accept (a syntax error, invalid
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

// simdjson's path: false when it hands the record on (a syntax error, invalid UTF-8, bytes after the
// object, a number beyond 64 bits, nesting deeper than kMaxJsonDepth - 1 levels), and then the caller
// checks the depth (json_depth_problem) and decodes with the reference.
bool decode_manifest_record_fast(const std::string& payload, ManifestRecord& out);
// nlohmann's path: false when `payload` is not one JSON object. Recurses: check the depth first.
bool decode_manifest_record_reference(const std::string& payload, ManifestRecord& out);

}  // namespace parity::dump::detail
