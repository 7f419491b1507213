// measure_parameter_updates (measure_updates.h). A parameter at step s > 0 is the optimizer's output from
// its value and gradient at the step before: judged on its own it carries every earlier step's rounding,
// so the ambient precision forgives it (classify_rows); whether the update itself differs is measured
// here from the tensors of both steps.
#include "compare/measure_updates.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "parity/noise.h"

namespace parity::compare {

namespace {

bool is_measured_parameter(const CompareRow& row) {
  return row.golden.role == "parameter" && row.mode == CompareMode::kTensor && row.metrics.has_value();
}

// "<module>/forward/parameter/<name>" → "<module>/backward/grad/<name>" (docs/dump-format.md event names).
std::string gradient_name(const std::string& parameter_name) {
  static const std::string from = "/forward/parameter/", to = "/backward/grad/";
  const size_t at = parameter_name.rfind(from);
  if (at == std::string::npos) return "";
  return parameter_name.substr(0, at) + to + parameter_name.substr(at + from.size());
}

struct UpdateJob {
  size_t before = 0, after = 0;  // row indices
  double grad_rel_error = kNaN;
};

std::vector<UpdateJob> plan_update_jobs(const CompareResult& result) {
  std::map<std::tuple<int, std::string>, std::map<int64_t, size_t>> by_parameter;  // (rank, name) → step → row
  std::map<std::tuple<int, int64_t, std::string>, double> grad_rel;                // (rank, step, name) → rel L2
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const CompareRow& row = result.rows[i];
    if (row.golden.step < 0) continue;
    if (is_measured_parameter(row)) by_parameter[{row.golden.rank, row.golden.name}][row.golden.step] = i;
    if (row.golden.role == "grad" && row.metrics) grad_rel[{row.golden.rank, row.golden.step, row.golden.name}] = row.metrics->rel_l2;
  }
  std::vector<UpdateJob> jobs;
  for (const auto& [key, steps] : by_parameter) {
    const std::string grad = gradient_name(std::get<1>(key));
    for (auto it = steps.begin(), next = std::next(it); next != steps.end(); ++it, ++next) {
      UpdateJob job{it->second, next->second, kNaN};
      if (auto g = grad_rel.find({std::get<0>(key), it->first, grad}); g != grad_rel.end()) job.grad_rel_error = g->second;
      jobs.push_back(job);
    }
  }
  return jobs;
}

}  // namespace

void measure_parameter_updates(CompareResult& result, const RecordSource& golden, const RecordSource& target,
                               int threads) {
  const std::vector<UpdateJob> jobs = plan_update_jobs(result);
  const int64_t n = static_cast<int64_t>(jobs.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (n > 1 && threads > 1)
  for (int64_t k = 0; k < n; ++k) {
    const UpdateJob& job = jobs[static_cast<size_t>(k)];
    CompareRow& after = result.rows[job.after];
    const CompareRow& before = result.rows[job.before];
    Result<TensorView> gb = golden.load(before.golden), ga = golden.load(after.golden);
    Result<TensorView> tb = target.load(before.target), ta = target.load(after.target);
    if (!gb.ok() || !ga.ok() || !tb.ok() || !ta.ok()) continue;
    Result<UpdateMetrics> m = compare_updates(*gb, *ga, *tb, *ta);
    if (!m.ok() || !(m->rel_error == m->rel_error)) continue;
    ParameterUpdate u;
    u.from_step = before.golden.step;
    u.rel_error = m->rel_error;
    u.golden_norm = m->golden_norm;
    u.grad_rel_error = job.grad_rel_error;
    u.differs = parameter_update_differs(u.rel_error, u.grad_rel_error,
                                         pair_unit_roundoff(after.golden.dtype, after.target.dtype));
    after.update = u;
  }
}

}  // namespace parity::compare
