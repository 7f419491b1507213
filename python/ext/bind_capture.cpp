// Python face of the capture kernels: fused statistics and CRC32C over host buffers handed over by
// address (tensor.data_ptr()), zero-copy, with the GIL released.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "parity/dump.h"

namespace py = pybind11;
using namespace parity;

void bind_capture(py::module_& m) {
  m.def(
      "fused_stats",
      [](uintptr_t ptr, const std::string& dtype, int64_t numel, int threads) {
        auto d = dtype_from_name(dtype);
        if (!d) throw py::value_error("unknown dtype \"" + dtype + "\"");
        if (ptr == 0 && numel > 0) throw py::value_error("fused_stats: null buffer");
        TensorStats s;
        {
          py::gil_scoped_release nogil;
          s = dump::fused_stats(*d, reinterpret_cast<const void*>(ptr), numel, threads);
        }
        return py::make_tuple(s.min, s.max, s.mean, s.l2norm, s.absmax, s.nan_count, s.inf_count, s.zero_count,
                              s.subnormal_count, s.numel);
      },
      py::arg("ptr"), py::arg("dtype"), py::arg("numel"), py::arg("threads") = 1,
      "Statistics of a C-contiguous host buffer: (min, max, mean, l2norm, absmax, nan, inf, zero, subnormal, numel)");
  m.def(
      "crc32c",
      [](py::buffer b, uint32_t crc) {
        py::buffer_info info = b.request();
        const auto n = static_cast<size_t>(info.size * info.itemsize);
        py::gil_scoped_release nogil;
        return dump::crc32c(info.ptr, n, crc);
      },
      py::arg("data"), py::arg("crc") = 0, "CRC32C (Castagnoli) of a contiguous buffer, optionally extending `crc`");
  m.def(
      "crc32c_ptr",
      [](uintptr_t ptr, uint64_t nbytes) {
        py::gil_scoped_release nogil;
        return dump::crc32c(reinterpret_cast<const void*>(ptr), nbytes);
      },
      py::arg("ptr"), py::arg("nbytes"));
  m.def("crc32c_uses_hardware", &dump::crc32c_uses_hardware);
}
