// The schema ids of parity/schemas.h for Python: the engines that write a parity output (parity.replay,
// parity.sensitivity, the capture's fingerprint) take its id from the one C++ declaration,
// `_parity_core.schemas.SCAN`, and `schemas.ALL` lists each as {name, id, doc, what}.
#include <pybind11/pybind11.h>

#include "parity/schemas.h"

namespace py = pybind11;

void bind_schemas(py::module_& m) {
  py::module_ s = m.def_submodule("schemas", "Every schema id parity writes or reads (include/parity/schemas.h)");
  py::list all;
  for (const parity::schemas::Schema* schema : parity::schemas::kAll) {
    s.attr(schema->name) = schema->id;
    py::dict entry;
    entry["name"] = schema->name;
    entry["id"] = schema->id;
    entry["doc"] = schema->doc;
    entry["what"] = schema->what;
    all.append(entry);
  }
  s.attr("ALL") = all;
}
