// python/ext/raise_status.h — how a parity::Status becomes a Python exception, the same in every
// binding: NotFound → FileNotFoundError, IOError → RuntimeError, anything else (Invalid, a corrupt
// file, ...) → ValueError. The message is the Status's own (it names the file and the problem).
#pragma once

#include <pybind11/pybind11.h>

#include "parity/status.h"

namespace parity_py {

[[noreturn]] inline void raise_status(const parity::Status& st) {
  if (st.code() == parity::StatusCode::kNotFound) {
    PyErr_SetString(PyExc_FileNotFoundError, st.message().c_str());
    throw pybind11::error_already_set();
  }
  if (st.code() == parity::StatusCode::kIOError) throw std::runtime_error(st.message());
  throw pybind11::value_error(st.message());
}

inline void check_status(const parity::Status& st) {
  if (!st.ok()) raise_status(st);
}

}  // namespace parity_py
