// The rounding-noise model (parity/noise.h) for Python: parity.replay measures a replayed op's error in
// the same unit as compare (docs/judgement.md "Noise unit"), from the one definition.
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "parity/dtype.h"
#include "parity/noise.h"
#include "parity/verdict.h"

namespace py = pybind11;

void bind_judgement(py::module_& m) {
  m.def(
      "unit_roundoff",
      [](const std::string& dtype) {
        auto t = parity::dtype_from_name(dtype);
        if (!t) throw std::invalid_argument("unit_roundoff: unknown dtype \"" + dtype + "\"");
        return parity::unit_roundoff(*t);
      },
      py::arg("dtype"), "Unit roundoff u of a parity dtype name (f32 2^-24, bf16 2^-8, ...; integers 0).");
  m.def("expected_rounding_error", &parity::expected_rounding_error, py::arg("u"), py::arg("reduction_length"),
        "u * sqrt(1 + log2 n): the expected relative error of a pure rounding difference.");
  m.def(
      "noise_params",
      [] {
        parity::NoiseParams p;
        return py::make_tuple(p.noise_max, p.structural_min);
      },
      "(noise_max, structural_min) of the noise classes.");
  m.def(
      "noise_class",
      [](double ratio) { return std::string(parity::noise_class_name(parity::noise_class_of_ratio(ratio))); },
      py::arg("ratio"), "The noise class of a noise ratio: \"noise\", \"elevated\", \"structural\" or \"unknown\" (NaN).");
  m.def("noise_ratio_text", &parity::noise_ratio_text, py::arg("ratio"),
        "How every output spells a noise ratio: \"0.41 u\", \"16777 u\", \"non-finite\", \"n/a\".");
}
