// src/dump/event_json.h — the JSON form of manifest records, shared by the writer and the reader so
// the two cannot disagree (docs/dump-format.md, "event record").
#pragma once

#include <nlohmann/json.hpp>

#include "parity/dump.h"

namespace parity::dump::detail {

// Statistics as {"min","max","mean","l2norm","absmax","nan","inf","zero","subnormal","numel"}; non-finite
// doubles are written as null (JSON has no NaN) and read back as NaN.
nlohmann::json stats_to_json(const TensorStats& s);
TensorStats stats_from_json(const nlohmann::json& j);

// The manifest record of an event; `data` is null for records without tensor bytes.
nlohmann::json event_to_json(const EventMeta& m, int rank, const nlohmann::json& data);

// "00000000".."ffffffff": checksums are written as 8 lower-case hex digits.
std::string crc_hex(uint32_t v);

}  // namespace parity::dump::detail
