// _parity_core.compare_arrays: the fused metrics kernel (include/parity/metrics.h) over two numpy
// arrays, for tests against an independent numpy reference and for notebooks.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <bit>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "parity/dtype.h"
#include "metrics/block_kernel.h"
#include "parity/metrics.h"
#include "raise_status.h"

namespace py = pybind11;

namespace {

// The parity dtype of a numpy array, or of its bits reinterpreted as `override` ("bf16" over uint16,
// "f8_e4m3" over uint8, ...), which must have the array's item size.
parity::DType array_dtype(const py::array& a, const std::optional<std::string>& override, const char* side) {
  // Item size and kind through the dtype's Python attributes: pybind11 < 2.12 (Debian's 2.10) reads them
  // from numpy 1's PyArray_Descr layout, and numpy 2 moved `elsize` (itemsize() returns garbage there).
  const py::object descr = a.dtype();
  const int itemsize = descr.attr("itemsize").cast<int>();
  if (override) {
    auto dt = parity::dtype_from_name(*override);
    if (!dt) throw py::value_error(std::string(side) + "_dtype: unknown dtype '" + *override + "'");
    if (parity::dtype_size(*dt) != itemsize) {
      throw py::value_error(std::string(side) + "_dtype " + *override + " has " +
                            std::to_string(parity::dtype_size(*dt)) + "-byte elements but the array has " +
                            std::to_string(itemsize) + "-byte elements");
    }
    return *dt;
  }
  const char kind = descr.attr("kind").cast<std::string>().at(0);
  std::optional<parity::DType> dt;
  if (kind == 'f') dt = itemsize == 8 ? parity::DType::kF64 : itemsize == 4 ? parity::DType::kF32
                      : itemsize == 2 ? std::optional(parity::DType::kF16) : std::nullopt;
  if (kind == 'i') dt = itemsize == 1 ? parity::DType::kI8 : itemsize == 2 ? parity::DType::kI16
                      : itemsize == 4 ? parity::DType::kI32 : std::optional(parity::DType::kI64);
  if (kind == 'u' && itemsize == 1) dt = parity::DType::kU8;
  if (kind == 'b') dt = parity::DType::kBool;
  if (!dt) {
    throw py::type_error(std::string(side) + ": numpy dtype " + std::string(py::str(a.dtype())) +
                         " is not supported (pass " + side + "_dtype to reinterpret its bits)");
  }
  return *dt;
}

parity::TensorView view_of(const py::array& a, parity::DType dt) {
  parity::TensorView v;
  v.dtype = dt;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) v.shape.push_back(static_cast<int64_t>(a.shape(i)));
  v.numel = static_cast<int64_t>(a.size());
  v.data = static_cast<const std::byte*>(a.data());
  // numpy's '>' / '<' marks a byte order other than this machine's ('=' and '|' are native).
  const char order = a.dtype().byteorder();
  const char native = std::endian::native == std::endian::little ? '<' : '>';
  v.byteswapped = (order == '>' || order == '<') && order != native;
  return v;
}

// The dicts are built from the metric tables (parity/metrics.h), in their order, so that their keys are
// the JSON's (parity.compare/1 `rows[].metrics`): the side statistics are `golden_stats` / `target_stats`.
py::dict side_dict(const parity::TensorStats& s) {
  py::dict d;
  for (const parity::TensorStatsField& f : parity::kSideStatsFields)
    std::visit([&](auto member) { d[f.name] = s.*member; }, f.member);
  return d;
}

py::object metric_value(const parity::TensorStats& s) { return side_dict(s); }
template <typename Value>
py::object metric_value(const Value& v) {
  return py::cast(v);
}

py::dict metrics_dict(const parity::PairMetrics& m) {
  py::dict d;
  for (const parity::MetricField& f : parity::kMetricFields)
    std::visit([&](auto member) { d[f.name] = metric_value(m.*member); }, f.member);
  return d;
}

py::dict compare_arrays(py::array golden, py::array target, bool kl, std::optional<std::string> golden_dtype,
                        std::optional<std::string> target_dtype, int threads) {
  // Non-contiguous arrays are copied to C order (the kernel's own strided path is tested in C++).
  golden = py::array::ensure(golden, py::array::c_style);
  target = py::array::ensure(target, py::array::c_style);
  if (!golden || !target) throw py::type_error("compare_arrays: arguments must be numpy arrays");
  const parity::TensorView g = view_of(golden, array_dtype(golden, golden_dtype, "golden"));
  const parity::TensorView t = view_of(target, array_dtype(target, target_dtype, "target"));
  parity::MetricOptions options;
  options.kl = kl;
  options.threads = threads;
  parity::Result<parity::PairMetrics> r = parity::Status::Internal("not run");
  {
    py::gil_scoped_release release;
    r = parity::compare_tensors(g, t, options);
  }
  if (!r.ok()) parity_py::raise_status(r.status());
  return metrics_dict(*r);
}

using RowArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

// KL(softmax(golden) ‖ softmax(target)) of every row (slices along the last dimension) of two float64
// arrays of logits or log-probabilities, through the one row policy and accumulator (parity/metrics.h):
// the per-row KL (NaN where skipped), which side each skipped row lacked a distribution on (0 none,
// 1 golden, 2 target), and the accumulator's summary.
py::dict kl_rows(const RowArray& golden, const RowArray& target) {
  if (golden.ndim() < 1 || golden.ndim() != target.ndim() || golden.size() != target.size())
    throw py::value_error("kl_rows: golden and target must be arrays of one shape");
  for (py::ssize_t d = 0; d < golden.ndim(); ++d)
    if (golden.shape(d) != target.shape(d)) throw py::value_error("kl_rows: golden and target shapes differ");
  const int64_t cols = golden.shape(golden.ndim() - 1);
  const int64_t rows = cols > 0 ? golden.size() / cols : 0;
  py::array_t<double> kl(std::vector<py::ssize_t>{static_cast<py::ssize_t>(rows)});
  static_assert(sizeof(parity::KlSkip) == sizeof(int8_t));
  py::array_t<int8_t> skip(std::vector<py::ssize_t>{static_cast<py::ssize_t>(rows)});
  double* kl_out = kl.mutable_data();
  auto* skip_out = reinterpret_cast<parity::KlSkip*>(skip.mutable_data());
  parity::KlSummary summary;
  {
    py::gil_scoped_release release;
    summary = parity::kl_of_rows(golden.data(), target.data(), rows, cols, 0, kl_out, skip_out);
  }
  py::dict d;
  d["kl"] = kl;
  d["skip"] = skip;
  d["mean"] = summary.mean;
  d["unc"] = summary.unc;
  d["count"] = summary.count;
  d["skipped"] = summary.skipped;
  d["skipped_target"] = summary.skipped_target;
  d["max"] = summary.max;
  return d;
}

}  // namespace

void bind_metrics(py::module_& m) {
  m.def("kl_rows", &kl_rows, py::arg("golden"), py::arg("target"),
        "KL(softmax(golden) || softmax(target)) per row (the last dimension) of two float64 arrays, with\n"
        "parity's one non-finite policy (docs/metrics.md 'KL divergence'): dict with kl (per row, NaN where\n"
        "skipped), skip (0 used, 1 golden, 2 target has no distribution), and the accumulator's mean, unc\n"
        "(llama.cpp's), count, skipped, skipped_target, max.");
  m.def("compare_arrays", &compare_arrays, py::arg("golden"), py::arg("target"), py::arg("kl") = false,
        py::arg("golden_dtype") = py::none(), py::arg("target_dtype") = py::none(), py::arg("threads") = 0,
        "Every comparison metric of a golden/target pair (docs/metrics.md) as a dict. golden_dtype /\n"
        "target_dtype reinterpret the array's bits as a parity dtype of the same size, e.g. 'bf16' over\n"
        "uint16 or 'f8_e4m3' over uint8. Raises ValueError for element-count mismatches.");
  m.def("metrics_kernel", [] { return std::string(parity::metrics_detail::block_kernel_name()); },
        "Which compiled variant of the metrics kernel this CPU runs: 'avx512vl', 'avx2' or 'baseline'.");
}
