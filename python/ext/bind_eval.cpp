// Python face of the eval layer: the compact logits writer used by parity.log_logits, and the
// comparison functions returning their versioned JSON (docs/eval.md).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>

#include "parity/eval.h"
#include "raise_status.h"

namespace py = pybind11;
using namespace parity;

namespace {

using parity_py::raise_status;

class PyLogitsWriter {
 public:
  PyLogitsWriter(const std::string& path, int top_k, int tail_bits, int64_t step, const std::string& source_dtype) {
    eval::LogitsWriterOptions o;
    o.top_k = top_k;
    o.tail_bits = tail_bits;
    o.step = step;
    o.source_dtype = source_dtype;
    auto w = eval::LogitsWriter::open(path, o);
    if (!w.ok()) raise_status(w.status());
    w_ = std::move(*w);
  }
  int64_t append(py::array_t<float, py::array::c_style | py::array::forcecast> logits,
                 py::array_t<int64_t, py::array::c_style | py::array::forcecast> labels, int64_t ignore_index) {
    if (!w_) throw std::runtime_error("LogitsWriter is closed");
    if (logits.ndim() != 2) throw std::invalid_argument("logits must be [tokens, vocab]");
    if (labels.ndim() != 1 || labels.shape(0) != logits.shape(0))
      throw std::invalid_argument("labels must be [tokens] matching the logits rows");
    Result<int64_t> n = 0;
    {
      py::gil_scoped_release release;
      n = w_->append(logits.data(), logits.shape(0), logits.shape(1), labels.data(), ignore_index);
    }
    if (!n.ok()) raise_status(n.status());
    return *n;
  }
  void close() {
    if (!w_) return;
    Status st = w_->close();
    w_.reset();
    if (!st.ok()) raise_status(st);
  }

 private:
  std::unique_ptr<eval::LogitsWriter> w_;
};

std::string compare_ppl_json(const std::string& golden, const std::string& target, const std::string& labels,
                             int rank, std::string kld_dtype) {
  auto g = eval::open_token_source(golden, rank, labels);
  if (!g.ok()) raise_status(g.status());
  auto t = eval::open_token_source(target, rank, labels);
  if (!t.ok()) raise_status(t.status());
  eval::PplThresholdOverrides user;
  user.kld_dtype = kld_dtype;
  user.kld_dtype_spelling = "kld_dtype=";  // kld_source names the Python argument
  eval::PplOptions o;
  o.thresholds = eval::choose_ppl_thresholds(user, (*g)->source_dtype(), (*t)->source_dtype());
  Result<eval::PplResult> r = Status::Internal("not run");
  {
    py::gil_scoped_release release;
    r = eval::compare_ppl(**g, **t, o);
  }
  if (!r.ok()) raise_status(r.status());
  return eval::ppl_json(*r);
}

}  // namespace

void bind_eval(py::module_& m) {
  py::class_<PyLogitsWriter>(m, "LogitsWriter", "Appends scored tokens to a parity.logits/1 file (docs/eval.md)")
      .def(py::init<const std::string&, int, int, int64_t, const std::string&>(), py::arg("path"),
           py::arg("top_k") = 256, py::arg("tail_bits") = 16, py::arg("step") = -1, py::arg("source_dtype") = "")
      .def("append", &PyLogitsWriter::append, py::arg("logits"), py::arg("labels"), py::arg("ignore_index") = -100,
           "logits float32 [n, vocab], labels int64 [n]; returns the number of tokens stored")
      .def("close", &PyLogitsWriter::close);
  m.def("eval_ppl_json", &compare_ppl_json, py::arg("golden"), py::arg("target"), py::arg("labels") = "",
        py::arg("rank") = 0, py::arg("kld_dtype") = "",
        "parity.eval.ppl/1 JSON text comparing two runs / .plg files / logits tensors");
  m.def("mcnemar_exact_p", &eval::mcnemar_exact_p, py::arg("b"), py::arg("c"));
}
