// ParameterUpdate (parity/compare.h) of every parameter row compared at a later step than another
// captured step of the same parameter (docs/judgement.md "Parameters across steps"), in three parts so
// that the tensor reads run where the rows are measured (one process, or each process of a group on its
// own share) and only the judgement, which needs every gradient row, runs where the rows are gathered:
//
//   plan_parameter_updates    every process, from metadata alone
//   measure_parameter_updates the process that measures the later row (reads the four tensors)
//   judge_parameter_updates   process 0, once every row is measured
#pragma once

#include <cstddef>
#include <vector>

#include "parity/compare.h"

namespace parity::compare {

// A parameter row at step s (`after`) and the row of the same parameter, rank and name at the latest
// earlier captured step (`before`), both planned as tensor comparisons.
struct UpdatePair {
  size_t before = 0, after = 0;  // row indices
};

// The pairs of consecutive captured steps of each parameter (role "parameter", mode kTensor, step ≥ 0),
// from the planned rows; in row order of `after`.
std::vector<UpdatePair> plan_parameter_updates(const RowList& rows);

// Loads the four tensors of each pair and writes rows[after].update with how the two runs' changes
// between the two steps differ (compare_updates): from_step, rel_error, golden_norm; not yet judged
// (grad_rel_error NaN, differs false). A pair whose tensors cannot be loaded again, or whose rows were
// not measured as tensors, gets no update (the rows' own verdicts say why).
void measure_parameter_updates(RowList& rows, const std::vector<UpdatePair>& pairs,
                               const RecordSource& golden, const RecordSource& target, int threads);

// For every row with a measured update: its gradient's rel L2 at from_step (the row "<module>/backward/
// grad/<name>" of the same rank and step, when compared) and the judgement parameter_update_differs.
void judge_parameter_updates(RowList& rows);

}  // namespace parity::compare
