// OUTLIERS: at an op that creates error (a source suspect), the tensors agree in direction (cosine ≥
// the pass threshold) but a few positions differ a lot (max |diff| ≥ 100 × mean |diff|). Seed 004 §2.2: "high cosine but large max_abs_diff means most
// values are right and one or two outliers are wrong; follow the outlier's position back to look for
// an overflow there".
#include <cmath>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

constexpr double kPeakToMean = 100.0;

std::string position(const Shape& shape, int64_t flat) {
  if (flat < 0) return "?";
  if (shape.empty()) return "[]";
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = std::max<int64_t>(shape[d], 1);
    idx[d] = flat % n;
    flat /= n;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  // Only where the error is created: the worst output row of each source suspect. Rows downstream of a
  // source carry its outliers and would repeat the same story at every layer.
  std::vector<const CompareRow*> candidates;
  for (const Suspect& s : ctx.analysis->suspects) {
    if (s.kind != SuspectKind::kSource) continue;
    const EventError& e = event_of(ctx, s);
    if (e.worst_output_row != SIZE_MAX) candidates.push_back(&ctx.result->rows[e.worst_output_row]);
  }
  std::vector<std::string> lines, events;
  for (const CompareRow* candidate : candidates) {
    const CompareRow& row = *candidate;
    // Only a failing row: an elevated (warn) row is within what the verdict accepts, and a few large
    // differences there are benign patterns too (a ReLU gradient mask flipping where a pre-activation
    // near 0 rounds to the other sign in bf16), not evidence of a local overflow.
    if (!row.metrics || row.verdict != Verdict::kFail) continue;
    const PairMetrics& m = *row.metrics;
    if (m.nonfinite_mismatch > 0) continue;  // NaN/Inf disagreements are OVERFLOW's
    const DTypeThresholds& th = ctx.result->thresholds.for_dtype(lower_precision(row.golden->dtype, row.target->dtype));
    if (std::isnan(m.cosine) || m.cosine < th.cosine_pass) continue;
    if (!(m.max_abs > 0) || !(m.mean_abs > 0) || m.max_abs < kPeakToMean * m.mean_abs) continue;
    lines.push_back(fmt::format("{}: cosine {}, max |diff| {} at {} = {:.0f} × mean |diff| {}", row.golden->name,
                                num(m.cosine), num(m.max_abs), position(row.golden->shape, m.max_abs_index),
                                m.max_abs / m.mean_abs, num(m.mean_abs)));
    events.push_back(row.golden->name);
  }
  if (events.empty()) return {};
  Diagnosis d;
  d.strength = 1;
  d.severity = Severity::kInfo;  // where the error sits, not a cause
  d.events = events;
  append_limited(d.evidence, lines, 8);
  d.advice =
      "Most values agree; look at the named positions: follow each outlier back through the producing ops to "
      "find where it first appears (often a local overflow or a special value) rather than tuning the whole "
      "layer (seed 004 §2.2).";
  return {d};
}

}  // namespace

extern const Rule rule_outliers{"OUTLIERS", "A few outlier positions, high cosine", run};

}  // namespace parity
