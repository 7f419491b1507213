// Python face of the compare pipeline: compare_runs() and its one serializer, as the same
// parity.compare/1 JSON text `parity compare --json` writes (docs/compare-json.md).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "parity/compare_runs.h"
#include "parity/open_source.h"
#include "raise_status.h"

namespace py = pybind11;
using namespace parity;

namespace {

using parity_py::raise_status;

std::string compare_json(const std::string& golden, const std::string& target, int64_t step, int rank,
                         const std::string& thresholds, const std::string& policy, const std::string& map_file,
                         bool align, const std::vector<std::string>& kl, bool fail_on_warn, int jobs) {
  CompareRunOptions o;
  ThresholdSources sources;  // the CLI's path (resolve_thresholds): defaults, the file, the policy
  sources.file = thresholds;
  if (!policy.empty()) {
    sources.policy = verdict_policy_from_name(policy);
    if (!sources.policy) throw std::invalid_argument("policy must be 'noise-model' or 'fixed-thresholds', got '" + policy + "'");
  }
  Result<Thresholds> th = resolve_thresholds(sources);
  if (!th.ok()) raise_status(th.status());
  o.compare.thresholds = std::move(*th);
  o.compare.step = step;
  o.compare.rank = rank;
  o.compare.map_file = map_file;
  o.compare.align = align;
  o.compare.kl_patterns = kl;
  o.compare.jobs = jobs;
  o.fail_on_warn = fail_on_warn;
  o.command = "parity.compare(" + golden + ", " + target + ")";
  std::string text;
  {
    py::gil_scoped_release release;
    Result<std::unique_ptr<RecordSource>> g = open_source(golden);
    Result<std::unique_ptr<RecordSource>> t = g.ok() ? open_source(target) : Result<std::unique_ptr<RecordSource>>(g.status());
    if (!g.ok() || !t.ok()) {
      py::gil_scoped_acquire acquire;
      raise_status(!g.ok() ? g.status() : t.status());
    }
    Result<CompareReport> r = compare_runs(**g, **t, o);
    if (!r.ok()) {
      py::gil_scoped_acquire acquire;
      raise_status(r.status());
    }
    text = compare_report_json_text(*r);
  }
  return text;
}

}  // namespace

void bind_compare(py::module_& m) {
  m.def("compare_json", &compare_json, py::arg("golden"), py::arg("target"), py::arg("step") = -1,
        py::arg("rank") = -1, py::arg("thresholds") = "", py::arg("policy") = "", py::arg("map_file") = "",
        py::arg("align") = true, py::arg("kl") = std::vector<std::string>{}, py::arg("fail_on_warn") = false,
        py::arg("jobs") = 0,
        "compare_runs() over two paths; returns the parity.compare/1 JSON text (docs/compare-json.md)");
}
