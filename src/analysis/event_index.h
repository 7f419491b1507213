// src/analysis/event_index.h — grouping compare rows into events (private to the analysis module).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parity/analysis.h"

namespace parity::analysis_detail {

// Role class of a record inside its event.
enum class Slot : uint8_t { kInput, kParameter, kOutput, kOther };
Slot slot_of(const Record& r);

// 0 for forward (and records without a direction), 1 for backward, 2 for the optimizer's records (after
// the step's backward): forward sorts first.
int direction_rank(const std::string& direction);

// Copies the identity of the event a record belongs to (event name, module, op, direction, step, rank)
// into a report's fields of those names (FirstDivergence, NanOrigin).
template <typename Report>
void set_event_identity(Report& out, const Record& r) {
  out.event = event_name(r);
  out.module = r.module;
  out.op = r.op;
  out.direction = r.direction;
  out.step = r.step;
  out.rank = r.rank;
}

// True when the rows carry capture metadata (some golden record has a role or a direction).
bool has_capture_metadata(const CompareResult& result);

// Is this op elementwise (no reduction: the rounding expectation uses n = 1)?
bool is_elementwise_op(const std::string& op);
// A fresh EventError for the event a record belongs to: its name stem, module, op, direction, step, rank and
// the record's place in execution order (local error's grouping and one-sided ops both start from it).
EventError event_error_of(const Record& r);

}  // namespace parity::analysis_detail
