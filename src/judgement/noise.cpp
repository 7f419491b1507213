// The rounding-noise model (docs/judgement.md): expected size of a pure rounding difference and the
// noise / elevated / structural classification of an observed relative error.
#include "parity/noise.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fmt/format.h"
#include "parity/number_text.h"

namespace parity {

double unit_roundoff(DType t) {
  const FloatFormat* f = float_format(t);
  if (f == nullptr) return 0.0;  // integers and bool are exact: any difference is structural
  return f->unit_roundoff;
}

double pair_unit_roundoff(DType a, DType b) { return std::max(unit_roundoff(a), unit_roundoff(b)); }

double expected_rounding_error(double u, int64_t reduction_length) {
  // u · sqrt(1 + log2 n): probabilistic error growth of blocked / pairwise summation (Higham & Mary
  // 2019). n ≤ 1 (elementwise or unknown) gives u: one rounding of the result.
  const double n = static_cast<double>(std::max<int64_t>(reduction_length, 1));
  return u * std::sqrt(1.0 + std::log2(n));
}

NoiseClass noise_class_of_ratio(double ratio, const NoiseParams& params) {
  if (std::isnan(ratio)) return NoiseClass::kUnknown;
  if (ratio <= params.noise_max) return NoiseClass::kNoise;
  if (ratio <= params.structural_min) return NoiseClass::kElevated;
  return NoiseClass::kStructural;
}

NoiseJudgement classify_noise(double observed, double u, int64_t reduction_length,
                              const NoiseParams& params) {
  NoiseJudgement j;
  j.observed = observed;
  j.expected = expected_rounding_error(u, reduction_length);
  if (std::isnan(observed)) return j;  // nothing measured: unknown
  if (observed == 0.0) {
    j.ratio = 0.0;
  } else if (j.expected == 0.0) {
    j.ratio = std::numeric_limits<double>::infinity();  // exact dtypes that differ
  } else {
    j.ratio = observed / j.expected;
  }
  j.cls = noise_class_of_ratio(j.ratio, params);
  return j;
}

std::string noise_ratio_text(double ratio) {
  if (std::isnan(ratio)) return std::string(kNoValueText);
  if (std::isinf(ratio)) return "non-finite";
  if (ratio >= 100) return fmt::format("{:.0f} u", ratio);
  return fmt::format("{:.3g} u", ratio);
}

bool parameter_update_differs(double update_rel_error, double grad_rel_error, double u) {
  if (!(update_rel_error == update_rel_error)) return false;  // NaN: nothing measured
  if (!(grad_rel_error == grad_rel_error)) return update_rel_error >= 0.5;
  if (!std::isfinite(grad_rel_error)) return false;  // the gradient itself differs structurally: its row says so
  const double g = grad_rel_error;
  return update_rel_error > 8.0 * g + 8.0 * std::sqrt(g) + 32.0 * u;
}

ErrorShape error_shape(const PairMetrics& m, int64_t last_dim) {
  ErrorShape s;
  const double gg = m.golden.l2norm * m.golden.l2norm, tt = m.target.l2norm * m.target.l2norm;
  const double dd = m.euclidean * m.euclidean;
  // Non-finite values or an empty tensor: no shape to speak of. Σ over compared elements only when every
  // element was compared (the side norms are over each side's finite elements).
  if (!(gg > 0) || !(dd > 0) || !std::isfinite(gg + tt + dd) || m.compared != m.numel || m.golden.absmax <= 0)
    return s;
  const double dg = 0.5 * (tt - gg - dd);  // ⟨d,g⟩ from ‖t‖² = ‖g‖² + 2⟨d,g⟩ + ‖d‖²
  s.along = std::min(1.0, std::fabs(dg) / std::sqrt(dd * gg));
  s.along_rel = std::fabs(dg) / gg;
  const double n_eff = std::min(gg / (m.golden.absmax * m.golden.absmax),
                                static_cast<double>(std::max<int64_t>(last_dim, 1)));
  s.z = s.along * std::sqrt(std::max(n_eff, 1.0));
  return s;
}

bool error_is_structured(const ErrorShape& shape, double expected) {
  return shape.z >= kStructuredZ && shape.along_rel >= 2.0 * expected;
}

}  // namespace parity
