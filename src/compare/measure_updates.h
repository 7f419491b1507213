// measure_parameter_updates: ParameterUpdate (parity/compare.h) of every parameter row compared at a later
// step than another captured step of the same parameter (docs/judgement.md "Parameters across steps").
#pragma once

#include "parity/compare.h"

namespace parity::compare {

// For each parameter row (role "parameter", compared as tensors) at step s whose parameter was also
// compared as tensors at an earlier captured step s0 (the latest one) on the same rank: loads the four
// tensors, measures how the two runs' changes between s0 and s differ (compare_updates), looks up the
// gradient's rel L2 at s0 and judges the update (parameter_update_differs). Rows whose tensors cannot be
// loaded again keep no update (their own verdicts already say why).
void measure_parameter_updates(CompareResult& result, const RecordSource& golden, const RecordSource& target,
                               int threads);

}  // namespace parity::compare
