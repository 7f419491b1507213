// parity/record_site.h — where a record sits in the model, read from its name once (docs/dump-format.md
// "Names"): the module, the module's call and the op. parity.compare/1 publishes it (rows[].site) and the
// report's model tree, the analysis and the layout merge read it from here; nothing else parses names.
#pragma once

#include <string>

#include "parity/source.h"

namespace parity {

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
