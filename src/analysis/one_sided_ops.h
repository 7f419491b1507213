// src/analysis/one_sided_ops.h — ops that one run executes and the other does not, as suspects (private
// to the analysis module; docs/judgement.md "Ops present in one run only").
#pragma once

#include <vector>

#include "parity/analysis.h"

namespace parity::analysis_detail {

// An op that computes values (not a cast, a copy or a view: those are how a run stores what it computes).
bool op_changes_values(const std::string& op);

// Adds a SuspectKind::kStructure suspect for every forward op event present in one run only (an
// unmatched op record) whose module call creates error after it: some event of that call, ending after
// the op, is a source. An attention without its 1/√d scaling leaves the softmax's input differing and
// the softmax a mere carrier; the op that is missing is what changed (issue 28 §6). Its score is the
// log2 of the worst output ratio of the call after it, so it ranks with the sources it explains (ties
// go to it: it comes first in the data flow). Appends each suspect's event to a.events.
void add_one_sided_op_suspects(const CompareResult& result, Analysis& a, std::vector<Suspect>& suspects);

}  // namespace parity::analysis_detail
