// The `_parity_core` extension: the Python face of the C++ core. Each area binds its functions in its
// own file python/ext/bind_<area>.cpp (`void bind_<area>(pybind11::module_&)`) plus one line here.
// Long-running calls release the GIL.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_capture(py::module_& m);
void bind_dump(py::module_& m);
void bind_schemas(py::module_& m);
void bind_metrics(py::module_& m);
void bind_eval(py::module_& m);
void bind_compare(py::module_& m);
void bind_numeric(py::module_& m);
void bind_judgement(py::module_& m);
void bind_analysis(py::module_& m);

PYBIND11_MODULE(_parity_core, m) {
  m.doc() = "parity C++ core (statistics, dump writing and reading, comparison metrics)";
#ifdef PARITY_VERSION
  m.attr("__version__") = PARITY_VERSION;
#endif
  bind_capture(m);
  bind_dump(m);
  bind_schemas(m);
  bind_metrics(m);
  bind_eval(m);
  bind_compare(m);
  bind_numeric(m);
  bind_judgement(m);
  bind_analysis(m);
}
