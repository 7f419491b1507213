// ACCUMULATION_NOISE: the runs differ, but no row is beyond what rounding explains and nothing creates
// structural error: different accumulation order / precision (seed 004 §1.1 MAC array summation order,
// §4.4 "matmul differs ~1e-6 → BLAS accumulation order → normal, no fix").
#include <algorithm>
#include <cmath>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  const Analysis& a = *ctx.analysis;
  // "No action needed" must never stand beside a failing verdict.
  if (a.rows_structural > 0 || ctx.result->summary.verdict == Verdict::kFail ||
      ctx.result->summary.verdict == Verdict::kError)
    return {};
  for (const Suspect& s : a.suspects)
    if (s.kind != SuspectKind::kSource) return {};
  // Nor beside a finding registered before it that names a cause (severity warn or fail): an OVERFLOW on
  // an op whose effect no compared row shows fails the run although every row is noise.
  if (ctx.earlier)
    for (const Diagnosis& d : *ctx.earlier)
      if (d.severity != Severity::kInfo) return {};
  double worst = 0;
  std::string worst_name;
  int64_t differing = 0, measured = 0;
  std::vector<double> ratios;
  for (const CompareRow& row : ctx.result->rows) {
    if (std::isnan(row.noise_ratio)) continue;
    ++measured;
    if (row.noise_ratio > 0) ++differing;
    ratios.push_back(row.noise_ratio);
    if (row.noise_ratio > worst) {
      worst = row.noise_ratio;
      worst_name = row.golden->name;
    }
  }
  if (differing == 0) return {};  // bit-identical: nothing to explain
  std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
  Diagnosis d;
  d.strength = 0;
  d.severity = Severity::kInfo;  // "no action needed" never changes a verdict
  d.evidence.push_back(fmt::format("{} of {} rows differ; none beyond rounding: {} noise, {} elevated, 0 structural",
                                   differing, measured, a.rows_noise, a.rows_elevated));
  d.evidence.push_back(fmt::format("median {}, worst {} at {}", units(ratios[ratios.size() / 2]), units(worst), worst_name));
  if (a.statistics_only) d.evidence.push_back("measured on statistics only: weaker evidence");
  d.events.push_back(worst_name);
  d.advice = "No action needed: the difference is consistent with rounding and accumulation order.";
  return {d};
}

}  // namespace

extern const Rule rule_accumulation_noise{"ACCUMULATION_NOISE", "Differences consistent with rounding / accumulation order", run};

}  // namespace parity
