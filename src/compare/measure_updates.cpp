// Parameter updates (measure_updates.h). A parameter at step s > 0 is the optimizer's output from its
// value and gradient at the step before: judged on its own it carries every earlier step's rounding,
// so the ambient precision forgives it (classify_rows); whether the update itself differs is measured
// here from the tensors of both steps.
#include "compare/measure_updates.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "parity/noise.h"

namespace parity::compare {

namespace {

// "<module>/forward/parameter/<name>" → "<module>/backward/grad/<name>" (docs/dump-format.md event names).
std::string gradient_name(const std::string& parameter_name) {
  static const std::string from = "/forward/parameter/", to = "/backward/grad/";
  const size_t at = parameter_name.rfind(from);
  if (at == std::string::npos) return "";
  return parameter_name.substr(0, at) + to + parameter_name.substr(at + from.size());
}

}  // namespace

std::vector<UpdatePair> plan_parameter_updates(const RowList& rows) {
  std::map<std::tuple<int, std::string>, std::map<int64_t, size_t>> by_parameter;  // (rank, name) → step → row
  for (size_t i = 0; i < rows.size(); ++i) {
    const CompareRow& row = rows[i];
    if (row.golden->step >= 0 && row.golden->role == "parameter" && row.mode == CompareMode::kTensor)
      by_parameter[{row.golden->rank, row.golden->name}][row.golden->step] = i;
  }
  std::vector<UpdatePair> pairs;
  for (const auto& [key, steps] : by_parameter)
    for (auto it = steps.begin(), next = std::next(it); next != steps.end(); ++it, ++next)
      pairs.push_back({it->second, next->second});
  std::sort(pairs.begin(), pairs.end(), [](const UpdatePair& a, const UpdatePair& b) { return a.after < b.after; });
  return pairs;
}

void measure_parameter_updates(RowList& rows, const std::vector<UpdatePair>& pairs,
                               const RecordSource& golden, const RecordSource& target, int threads) {
  const int64_t n = static_cast<int64_t>(pairs.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (n > 1 && threads > 1)
  for (int64_t k = 0; k < n; ++k) {
    const UpdatePair& pair = pairs[static_cast<size_t>(k)];
    CompareRow& after = rows[pair.after];
    const CompareRow& before = rows[pair.before];
    // The later row is this process's (it measured it); the earlier one may be another's, so its
    // tensors are simply loaded again: one that cannot be read leaves no update, as a failed row does.
    if (!after.metrics) continue;
    Result<TensorView> gb = golden.load(*before.golden), ga = golden.load(*after.golden);
    Result<TensorView> tb = target.load(*before.target), ta = target.load(*after.target);
    if (!gb.ok() || !ga.ok() || !tb.ok() || !ta.ok()) continue;
    Result<UpdateMetrics> m = compare_updates(*gb, *ga, *tb, *ta);
    if (!m.ok() || !(m->rel_error == m->rel_error)) continue;
    ParameterUpdate u;
    u.from_step = before.golden->step;
    u.rel_error = m->rel_error;
    u.golden_norm = m->golden_norm;
    u.moved = m->moved;
    u.stalled = m->stalled;
    u.lost = m->lost;
    after.update = u;
  }
}

void judge_parameter_updates(RowList& rows) {
  std::map<std::tuple<int, int64_t, std::string>, double> grad_rel;  // (rank, step, name) → rel L2
  for (const CompareRow& row : rows)
    if (row.golden->step >= 0 && row.golden->role == "grad" && row.metrics)
      grad_rel[{row.golden->rank, row.golden->step, row.golden->name}] = row.metrics->rel_l2;
  for (CompareRow& row : rows) {
    if (!row.update) continue;
    ParameterUpdate& u = *row.update;
    const auto g = grad_rel.find({row.golden->rank, u.from_step, gradient_name(row.golden->name)});
    u.grad_rel_error = g != grad_rel.end() ? g->second : kNaN;
    u.differs = parameter_update_differs(u.rel_error, u.grad_rel_error,
                                         pair_unit_roundoff(row.golden->dtype, row.target->dtype));
  }
}

}  // namespace parity::compare
