// _parity_core rounding kernels (include/parity/rounding.h) for precision emulation (docs/emulation.md):
// each works in place on a C-contiguous, writeable float32 numpy array — a torch CPU tensor's .numpy()
// view shares its memory — so rounding a tensor costs no copy. Anything else is a TypeError naming the
// problem rather than a silent copy (whose rounding the caller would never see).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "parity/dtype.h"
#include "parity/rounding.h"
#include "raise_status.h"

namespace py = pybind11;

namespace {

float* writable_f32(py::array& a, const char* fn) {
  // isinstance<array_t<float>> asks numpy (PyArray_EquivTypes: float32, native byte order) instead of
  // reading the dtype struct, whose layout changed in numpy 2 (older pybind11 misreads its itemsize).
  if (!py::isinstance<py::array_t<float>>(a)) {
    throw py::type_error(std::string(fn) + ": expected a native-order float32 array, got " +
                         std::string(py::str(a.dtype())));
  }
  if (!(a.flags() & py::array::c_style)) throw py::type_error(std::string(fn) + ": the array is not C-contiguous");
  if (!a.writeable()) throw py::type_error(std::string(fn) + ": the array is read-only");
  return static_cast<float*>(a.mutable_data());
}

parity::DType float_dtype(const std::string& name) {
  auto t = parity::dtype_from_name(name);
  if (!t || !parity::dtype_is_float(*t) || *t == parity::DType::kF64) {
    throw py::value_error("round_: '" + name + "' is not one of f32, bf16, f16, f8_e4m3, f8_e5m2");
  }
  return *t;
}

// [outer, channels, inner] view of a C-order array around `axis`.
void split_axis(const py::array& a, int axis, int64_t& outer, int64_t& channels, int64_t& inner) {
  const int nd = static_cast<int>(a.ndim());
  if (axis < 0) axis += nd;
  if (nd == 0 || axis < 0 || axis >= nd) {
    throw py::value_error("axis " + std::to_string(axis) + " is out of range for a " + std::to_string(nd) +
                          "-d array");
  }
  outer = 1;
  inner = 1;
  for (int i = 0; i < axis; ++i) outer *= a.shape(i);
  channels = a.shape(axis);
  for (int i = axis + 1; i < nd; ++i) inner *= a.shape(i);
}

void bind_dtype_table(py::module_& m) {
  // The one dtype table (include/parity/dtype.h) for Python: capture's torch names, load's numpy dtypes
  // and emulation's formats are checked against it (tests/python/test_dtype_table.py).
  m.def(
      "dtypes",
      [] {
        py::list out;
        for (int k = 0; k < parity::kNumDTypes; ++k) {
          const auto t = static_cast<parity::DType>(k);
          py::dict d;
          d["name"] = parity::dtype_name(t);
          d["size"] = parity::dtype_size(t);
          d["is_float"] = parity::dtype_is_float(t);
          const parity::FloatFormat* f = parity::float_format(t);
          d["max_finite"] = f ? py::object(py::float_(f->max_finite)) : py::none();
          out.append(std::move(d));
        }
        return out;
      },
      "Every parity dtype: [{name, size (bytes), is_float, max_finite (None for integers)}], in the order of include/parity/dtype.h.");
}

// Rounding to a float format, in place (round_, round_mantissa_, flush_subnormals_).
void bind_rounding(py::module_& m) {
  m.def(
      "round_",
      [](py::array a, const std::string& dtype, bool saturate, bool flush_subnormals) {
        float* p = writable_f32(a, "round_");
        const parity::DType t = float_dtype(dtype);
        parity::RoundOptions o;
        o.overflow = saturate ? parity::Overflow::kSaturate : parity::Overflow::kFormat;
        o.flush_subnormals = flush_subnormals;
        parity::Status st;
        {
          py::gil_scoped_release release;
          st = parity::round_f32_inplace(t, p, static_cast<int64_t>(a.size()), o);
        }
        parity_py::check_status(st);
      },
      py::arg("array"), py::arg("dtype"), py::arg("saturate") = false, py::arg("flush_subnormals") = false,
      "Round a float32 array in place to dtype (f32, bf16, f16, f8_e4m3, f8_e5m2), nearest-even; overflow is "
      "the format's (inf, NaN for e4m3fn) or, with saturate, +-max_finite; flush_subnormals flushes results "
      "below the format's smallest normal to zero.");
  m.def(
      "round_mantissa_",
      [](py::array a, int bits) {
        float* p = writable_f32(a, "round_mantissa_");
        parity::Status st;
        {
          py::gil_scoped_release release;
          st = parity::round_f32_mantissa_inplace(p, static_cast<int64_t>(a.size()), bits);
        }
        parity_py::check_status(st);
      },
      py::arg("array"), py::arg("mantissa_bits"),
      "Round a float32 array in place to mantissa_bits fraction bits in float32's exponent range (10 = TF32).");
  m.def(
      "flush_subnormals_",
      [](py::array a) {
        float* p = writable_f32(a, "flush_subnormals_");
        py::gil_scoped_release release;
        parity::flush_subnormals_f32_inplace(p, static_cast<int64_t>(a.size()));
      },
      py::arg("array"), "Replace float32 subnormals by zero of the same sign, in place.");
}

// Symmetric int8 fake quantisation and its scales (finite_absmax*, fake_quant_int8*).
void bind_int8_quantisation(py::module_& m) {
  m.def(
      "finite_absmax",
      [](py::array a) {
        const float* p = writable_f32(a, "finite_absmax");
        py::gil_scoped_release release;
        return parity::finite_absmax_f32(p, static_cast<int64_t>(a.size()));
      },
      py::arg("array"), "max |x| over the finite values of a float32 array (0 when there is none).");
  m.def(
      "finite_absmax_channels",
      [](py::array a, int axis) {
        const float* p = writable_f32(a, "finite_absmax_channels");
        int64_t outer, channels, inner;
        split_axis(a, axis, outer, channels, inner);
        // A list, not a new numpy array: building one here needs the dtype struct's item size, which older
        // pybind11 misreads under numpy 2 (see writable_f32).
        std::vector<float> out(static_cast<size_t>(channels));
        {
          py::gil_scoped_release release;
          parity::finite_absmax_channels_f32(p, outer, channels, inner, out.data());
        }
        return out;
      },
      py::arg("array"), py::arg("axis"), "Per-channel finite max |x| along `axis` of a float32 array, as a list.");
  m.def(
      "fake_quant_int8_",
      [](py::array a, float scale) {
        float* p = writable_f32(a, "fake_quant_int8_");
        parity::Status st;
        {
          py::gil_scoped_release release;
          st = parity::fake_quant_int8_inplace(p, static_cast<int64_t>(a.size()), scale);
        }
        parity_py::check_status(st);
      },
      py::arg("array"), py::arg("scale"),
      "Symmetric int8 fake quantisation in place: clamp(rne(x * (1/scale)), -127, 127) * scale.");
  m.def(
      "fake_quant_int8_channels_",
      [](py::array a, int axis, py::array scales) {
        float* p = writable_f32(a, "fake_quant_int8_channels_");
        const float* s = writable_f32(scales, "fake_quant_int8_channels_ (scales)");
        int64_t outer, channels, inner;
        split_axis(a, axis, outer, channels, inner);
        if (scales.size() != channels) {
          throw py::value_error("fake_quant_int8_channels_: " + std::to_string(scales.size()) + " scales for " +
                                std::to_string(channels) + " channels");
        }
        parity::Status st;
        {
          py::gil_scoped_release release;
          st = parity::fake_quant_int8_channels_inplace(p, outer, channels, inner, s);
        }
        parity_py::check_status(st);
      },
      py::arg("array"), py::arg("axis"), py::arg("scales"),
      "Per-channel symmetric int8 fake quantisation in place along `axis`, channel c with scales[c].");
}

}  // namespace

void bind_numeric(py::module_& m) {
  bind_dtype_table(m);
  bind_rounding(m);
  bind_int8_quantisation(m);
}
