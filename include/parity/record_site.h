// parity/record_site.h — what a record's name says, read once (docs/dump-format.md "Names"): the event it
// belongs to, and where it sits in the model (the module, the module's call, the op). parity.compare/1
// publishes both (rows[].event, rows[].site); the report's model tree, the analysis and the layout merge
// read them from here; nothing else parses names.
#pragma once

#include <string>
#include <string_view>

#include "parity/source.h"

namespace parity {

// The event name shown to users: the name stem (without step/rank), as a view into the record's name.
std::string_view event_stem(const Record& r);
std::string event_name(const Record& r);
// The stem of a record name alone: `name` without its "<sep><role>[<sep><index>...]" suffix, where the role
// is `role` or one of the role words every capture writes (input, output, parameter(s), grad); a name without
// such a suffix is its own stem. event_stem(r) is this for a record with a role. Bound to Python
// (python/ext/bind_analysis.cpp): parity.replay names events by it.
std::string_view event_stem_of_name(std::string_view name, std::string_view role = {});

// Where a record sits in the model: the one reading of a record's place that every output shows (the
// report's model tree reads it from parity.compare/1 `rows[].site`, docs/compare-json.md). Capture names
// (docs/dump-format.md "Names") give the module call and the op: "<module>[#k]/<direction>/..." is the
// module's own record, "<parent>[#k]/<op>#<j>/<direction>/..." an op's record in that call of the
// parent. The module path is the record's `module` when the source sets one (else the name's module part).
// Any other name (a tensor file, an archive key, a directory path) is its own place: the name without its
// file extension, '/' and ':' read as '.' ("blocks.2.mlp.out.npy" -> blocks.2.mlp.out, call 0, no op).
struct EventSite {
  std::string module;  // dotted module path; "<root>", "<global>" as capture writes them
  int call = 0;        // the module's call within the step: k of "#k", 0 for the first call
  std::string op;      // an op record's op as named in the step ("softmax#0"); empty for a module's records
};
EventSite event_site(const Record& r);

}  // namespace parity
