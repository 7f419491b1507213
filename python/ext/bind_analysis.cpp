// The analysis rules parity.replay shares with compare (include/parity/analysis.h), bound so that Python holds
// no second copy: how a record name splits into its event's stem, the reduction length n of an op's rounding
// expectation, and the amplification that makes an event a source of error (docs/replay.md).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parity/analysis.h"
#include "parity/dtype.h"

namespace py = pybind11;

namespace {

// The shape of the first floating input among (dtype name, shape) pairs in index order, as classify_rows picks
// it (EventRecords: the lowest-index input record of a float dtype); nullopt when none is floating.
std::optional<parity::Shape> first_float_shape(const std::vector<std::pair<std::string, parity::Shape>>& inputs) {
  for (const auto& [dtype, shape] : inputs) {
    const std::optional<parity::DType> t = parity::dtype_from_name(dtype);
    if (t && parity::dtype_is_float(*t)) return shape;
  }
  return std::nullopt;
}

}  // namespace

void bind_analysis(py::module_& m) {
  m.def(
      "event_stem",
      [](const std::string& name, const std::string& role) {
        return std::string(parity::event_stem_of_name(name, role));
      },
      py::arg("name"), py::arg("role") = "",
      "The event stem of a record name: without its /<role>/<index> suffix (the direction stays: "
      "\"a/softmax#0/forward/output/0\" -> \"a/softmax#0/forward\"); a name without one is its own stem.");
  m.def(
      "reduction_length",
      [](const std::string& op, const std::vector<std::pair<std::string, parity::Shape>>& inputs,
         const parity::Shape& output) {
        const std::optional<parity::Shape> first = first_float_shape(inputs);
        return parity::op_reduction_length(op, first ? &*first : nullptr, output);
      },
      py::arg("op"), py::arg("inputs"), py::arg("output"),
      "Reduction length n of op `op`'s rounding expectation, as compare's classify_rows computes it: 1 for an "
      "elementwise op, else the last dimension of the first floating input (inputs: [(dtype name, shape)] in "
      "index order), else of the output shape.");
  m.attr("source_amplification") = parity::AnalysisOptions{}.source_amplification;
}
