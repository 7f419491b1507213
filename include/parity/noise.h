// parity/noise.h — what a pure rounding difference looks like, and how far a pair is from it.
//
// Two runs that compute the same maths in different precisions (or the same precision in a different
// summation order) differ by rounding only. The size of that difference is predictable: a few units of
// the unit roundoff u of the lower-precision side, growing slowly with the length of the reduction that
// produced the value. parity expresses the observed relative error of a pair in those units (the *noise
// ratio*) and classifies it as noise, elevated or structural. Model, constants and sources:
// docs/judgement.md.
#pragma once

#include <cstdint>
#include <string>

#include "parity/dtype.h"
#include "parity/metrics.h"  // kNaN
#include "parity/verdict.h"  // NoiseClass

namespace parity {

// Unit roundoff u = 2^-(mantissa_bits+1) of a float dtype: f64 2^-53, f32 2^-24, f16 2^-11, bf16 2^-8,
// f8_e4m3 2^-4, f8_e5m2 2^-3 (anchors "Tolerance conventions"). Integer and bool dtypes: 0 (any
// difference is structural).
double unit_roundoff(DType t);

// The larger unit roundoff of two dtypes (the lower-precision side decides the noise unit).
double pair_unit_roundoff(DType a, DType b);

// Classification thresholds on the noise ratio r = observed / expected (docs/judgement.md).
struct NoiseParams {
  double noise_max = 4.0;        // r ≤ 4: consistent with rounding (measured ≤ 2.2 on real ops)
  double structural_min = 32.0;  // r > 32: not explainable by rounding; in between: elevated
};

// Expected relative (normwise) error of a pure rounding difference:
//   expected = u · sqrt(1 + log2(n))
// with u the unit roundoff of the lower-precision side and n the reduction length (1 when unknown or
// elementwise). sqrt(log n) is the probabilistic growth of blocked/pairwise summation error
// (Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019); the leading constant is 1 (measured 0.2–0.6 for a
// single bf16/fp16 op on random data, ≈ 2 for fp32 re-ordered sums of 1024 terms).
double expected_rounding_error(double u, int64_t reduction_length);

struct NoiseJudgement {
  NoiseClass cls = NoiseClass::kUnknown;
  double ratio = kNaN;     // observed / expected; +inf when u = 0 and the values differ
  double expected = kNaN;  // expected relative error (above)
  double observed = kNaN;  // the relative error used (rel_l2, or a statistic's relative difference)
};

// Classify an observed relative error against the rounding expectation for unit roundoff `u`.
// NaN observed → kUnknown. observed = 0 → noise with ratio 0.
NoiseJudgement classify_noise(double observed, double u, int64_t reduction_length,
                              const NoiseParams& params = {});

// How every output spells a noise ratio: "0.41 u", "16777 u", "non-finite", "n/a" (u = one expected
// rounding, docs/judgement.md).
std::string noise_ratio_text(double ratio);

// Whether two runs' updates of a parameter between two steps differ by more than the difference of the
// gradients they were computed from explains (docs/judgement.md "Parameters across steps"). With g the
// gradient's relative error at the earlier step and u the parameter's unit roundoff, the update differs when
//   update_rel_error > 8·g + 8·sqrt(g) + 32·u
// 8·g: SGD (with momentum) carries g into the update unchanged. 8·sqrt(g): Adam divides by sqrt(v), so
// entries whose gradient is below its own error flip sign; their fraction grows like g and the update's
// relative error like sqrt(g) (measured 3.0·sqrt(g) on a healthy autocast-bf16 AdamW step, 0.09·sqrt(g) on
// an fp32 kernel swap). 32·u: the optimizer's own rounding when the gradients agree exactly. Without a
// compared gradient the update differs when update_rel_error ≥ 0.5 (a learning rate 1.5x, a missing step).
bool parameter_update_differs(double update_rel_error, double grad_rel_error, double u);

// The shape of a difference d = t − g, not only its size (docs/judgement.md "The shape of an error").
// d splits into a part along the golden, α·g with α = ⟨d,g⟩/‖g‖², and a part orthogonal to it. Rounding
// puts independent, zero-mean errors on the elements, so its part along g is a small random fraction:
// for any independent zero-mean d_i, ⟨d,g⟩ has variance Σ g_i²·var(d_i) ≤ max g_i² · E‖d‖², hence
//   along = |⟨d,g⟩| / (‖d‖·‖g‖)  ≈  |N(0,1)| / sqrt(n_eff),   n_eff ≥ ‖g‖² / max g_i².
// A scale or offset error (a sum that stopped growing in low precision, a wrong eps, a scale applied twice)
// lies along g whatever its size. `z` = along · sqrt(n_eff) with n_eff the smaller of ‖g‖²/max g_i² and
// the last dimension (rows of a batch share one weight rounding, so their errors are not independent
// across the batch): under rounding z is at most |N(0,1)| in distribution.
// ⟨d,g⟩ = (‖t‖² − ‖g‖² − ‖d‖²) / 2 from the fp64 sums of the kernel.
struct ErrorShape {
  double along = kNaN;      // |⟨d,g⟩| / (‖d‖·‖g‖): the fraction of ‖d‖ that lies along g, in [0, 1]
  double along_rel = kNaN;  // |⟨d,g⟩| / ‖g‖²: the size of that part relative to ‖g‖
  double z = kNaN;          // along · sqrt(n_eff): standard deviations of rounding's |N(0,1)|
};
ErrorShape error_shape(const PairMetrics& m, int64_t last_dim);

// Whether a difference is structured, not rounding: its part along g is both improbable for rounding
// (z ≥ kStructuredZ: 6 standard deviations, a false alarm below 2e-9 a row) and larger than a rounding's
// allowance (along_rel ≥ 2·expected), so a per-row scale error of an fp32 norm summed in another order
// (along g, but of one rounding's size) is not called structure.
inline constexpr double kStructuredZ = 6.0;
bool error_is_structured(const ErrorShape& shape, double expected);

// The class of a ratio alone.
NoiseClass noise_class_of_ratio(double ratio, const NoiseParams& params = {});

// The observed relative error of a compared row is row_observed_error() (parity/compare.h).

}  // namespace parity
