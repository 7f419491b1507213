// src/diagnosis/rule_util.h — small helpers shared by the rules (formatting, row lookups).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "parity/diagnosis.h"

namespace parity::diagnosis_detail {

// "3.2 u", "412 u", "non-finite", "n/a": a noise ratio, as every output spells it (parity/noise.h).
inline std::string units(double r) { return noise_ratio_text(r); }

inline std::string num(double v) {
  if (std::isnan(v)) return "n/a";
  return fmt::format("{:.4g}", v);
}

// "cosine 0.9871, rel_l2 3.1e-02, max_abs 0.52 (12.4 u)" for a tensor row; statistics rows name the
// worst relative statistic difference.
std::string row_summary(const CompareRow& row);

// The event of an analysis suspect.
inline const EventError& event_of(const DiagnosisContext& ctx, const Suspect& s) {
  return ctx.analysis->events[s.event];
}

// Evidence line "<worst output row>: <row_summary>" for an event, when it has an output row.
inline void add_worst_output_row(const DiagnosisContext& ctx, const EventError& e, std::vector<std::string>& evidence) {
  if (e.worst_output_row == SIZE_MAX) return;
  const CompareRow& row = ctx.result->rows[e.worst_output_row];
  evidence.push_back(fmt::format("{}: {}", row.golden->name, row_summary(row)));
}

// The first forward source suspect that is not explained by a contained event, or null.
const Suspect* top_source(const DiagnosisContext& ctx);

// True when an input of the origin holds its dtype's extreme finite value (±finfo.max): a mask filled with
// finfo(dtype).min plus a score overflows to −inf in fp16, and that −inf is what the mask stands for
// (docs/metrics.md "Dtype extremes"). Such an origin does not make the gradients the forward pass's
// consequence (GRAD_UNDERFLOW, GRAD_OVERFLOW); OVERFLOW still names it.
bool born_from_dtype_extreme(const NanOrigin& o);

// True when NaN/Inf are born in the target's forward pass (an origin born from a dtype extreme excepted) (OVERFLOW's story: whatever follows in
// backward, gradients included, is its consequence).
bool target_forward_nonfinite(const DiagnosisContext& ctx);

// True when the model's own forward pass creates error: a forward suspect inside the model (not at
// "<global>", where the loss is scaled outside the model). Gradients are then its consequence.
bool model_forward_differs(const DiagnosisContext& ctx);

// True when the row is a parameter gradient.
bool is_param_grad_row(const CompareRow& row);

// Append up to `limit` items, then "... and N more".
void append_limited(std::vector<std::string>& out, const std::vector<std::string>& items, size_t limit);

}  // namespace parity::diagnosis_detail
