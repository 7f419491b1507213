// parity/metrics.h — the one fused kernel that computes every comparison metric of a tensor pair.
//
// g = golden (msprobe's "bench", B), t = target (msprobe's "npu", N). One pass over both tensors,
// multi-threaded over chunks, vectorised inside a chunk, accumulating in fp64 with per-chunk partial
// sums combined pairwise. Every command (compare, the Python binding, reports) uses this one definition.
// Formulas, sources and NaN/Inf/zero policies: docs/metrics.md.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <variant>

#include "parity/status.h"
#include "parity/tensor.h"

namespace parity {

struct MetricOptions {
  bool kl = false;          // compute softmax KL along the last dimension (logits-like tensors)
  int threads = 0;          // 0 = OpenMP default
  // msprobe's epsilon for relative error where the golden is zero: msprobe compares float64 copies and
  // adds np.finfo(float64).eps (2^-52) to both sides where the golden is 0 (see docs/metrics.md).
  double rel_epsilon = std::numeric_limits<double>::epsilon();
  // Elements whose |golden| is below this and nonzero, but whose target is exactly 0, count as
  // flushed to zero even when they are normal in the target's dtype ("subnormal-or-tiny").
  double ftz_tiny = 0.0;    // 0 = use the target dtype's smallest normal
  // Compare the target multiplied by 2^-target_scale_log2 (a loss-scaled gradient, parity/loss_scale.h):
  // exact in fp64 for every stored dtype. Every metric, and the target's statistics, describe the scaled
  // target — except its subnormal count, which counts the values as stored (subnormal in its dtype is a
  // property of what the target holds; GRAD_UNDERFLOW reads it). KL is not computed on a scaled pair.
  // 0 (the default) keeps the fused fast paths; a scaled pair takes the general kernel.
  int target_scale_log2 = 0;
  // Read each side's largest finite magnitude of its own dtype (±finfo(dtype).max: −3.4e38 in fp32, −65504
  // in fp16) as ±infinity. Frameworks fill masks with torch.finfo(dtype).min as "minus infinity", so an fp32
  // and an fp16 run hold the same mask as −3.4e38 and −65504; read as −inf on both sides they agree, as
  // non-finite positions do (docs/metrics.md "Dtype extremes"). Only what compare_rows asks for
  // (parity/compare.h); like a scaled target, the pair takes the general kernel and gets no KL.
  bool extremes_as_infinities = false;
  // With extremes_as_infinities: the magnitude from which each side's values read as ±inf; 0 = its dtype's
  // largest finite value. A mask of a narrower dtype stored after arithmetic in a wider one (finfo(fp16).min
  // + score kept in fp32: −65504.08) is not that dtype's extreme any more (docs/metrics.md "Dtype extremes").
  double golden_infinity_from = 0.0, target_infinity_from = 0.0;
};

struct PairMetrics {
  int64_t numel = 0;        // elements in each tensor
  int64_t compared = 0;     // elements entering the error metrics (non-finite agreeing positions excluded)

  // Direction and size of the difference d = t - g (over compared elements).
  // t·g / (‖t‖‖g‖); as msprobe: both norms ≤ 2^-52 → 1, one of them → NaN, a single element → NaN
  // ("unsupported").
  double cosine = kNaN;
  double euclidean = kNaN;  // ‖t − g‖₂
  double rel_l2 = kNaN;     // ‖t − g‖₂ / ‖g‖₂ (NaN when ‖g‖ = 0 and ‖t − g‖ > 0; 0 when both 0)
  double rmse = kNaN;       // sqrt(mean((t − g)²))
  double sqnr_db = kNaN;    // 10·log10(Σg² / Σ(t−g)²); +inf when identical

  double max_abs = kNaN;    // max |t − g|
  int64_t max_abs_index = -1;  // flat C-order index of the first element attaining max_abs
  double mean_abs = kNaN;   // mean |t − g|

  // msprobe: rel_i = |t_i − g_i| / |g_i|, where g_i == 0 → both t_i and g_i get rel_epsilon added.
  double max_rel = kNaN;
  int64_t max_rel_index = -1;
  double thousandth_ratio = kNaN;       // fraction with rel_i < 0.001 (msprobe One Thousandth Err Ratio)
  double five_thousandth_ratio = kNaN;  // fraction with rel_i < 0.005
  // Seed 004's error distribution: fraction with |t − g| > 1e-6, 1e-4, 1e-2.
  double frac_abs_gt_1e6 = kNaN, frac_abs_gt_1e4 = kNaN, frac_abs_gt_1e2 = kNaN;

  // ULP error in the target's dtype: |t − g| / ulp_target(g).
  double ulp_max = kNaN, ulp_mean = kNaN;
  double frac_ulp_gt1 = kNaN;  // fraction more than 1 ULP away

  // Non-finite values. Positions where both sides hold the same non-finite class (NaN/NaN, +Inf/+Inf,
  // −Inf/−Inf) are excluded from the error metrics; any other mismatch makes the pair an error.
  bool nonfinite_agree = true;
  int64_t nonfinite_mismatch = 0;

  // Flush-to-zero signature: golden nonzero and below the tiny bound, target exactly zero.
  int64_t ftz_count = 0;

  // Each side's statistics (parity/tensor.h's conventions): NaN where no element is finite; subnormals
  // counted in the *target's* dtype (both sides measured against one bound); ±Inf split; std measured.
  TensorStats golden, target;

  // Mean over rows of KL(softmax(g_row) ‖ softmax(t_row)), natural log, computed with max subtraction.
  double kl = kNaN;
  bool kl_computed = false;
  int64_t kl_rows = 0;          // rows entering the KL mean
  int64_t kl_rows_skipped = 0;  // rows holding NaN or +Inf on either side, or all −Inf in golden
};

// ---- The metric table ---------------------------------------------------------------------------------
// Every field of PairMetrics, and each published statistic of a pair's side (kSideStatsFields), once:
// its name (the JSON key of parity.compare/1 `rows[].metrics`, the Python dict key of
// _parity_core.compare_arrays, the CSV/Arrow column), the member it reads, where it appears and a
// one-line meaning. The JSON writer (pipeline/compare_json.cpp, keys in
// sorted order), the row table's columns (report/compare_columns.cpp, table order) and the Python dict
// (python/ext/bind_metrics.cpp, table order) iterate these tables; tests/metrics/metric_table_test.cpp
// holds docs/compare-json.md and the report (web/src/data.js) to them. Adding a metric: its kernel code,
// its member above and one row here (docs/architecture.md "Extension points").

enum class MetricKind {
  // In the JSON, the Python dict, and a column of the row table (parity.compare.csv/2,
  // parity.compare.arrow/1) at the row's place among the tensor-mode columns. Those layouts are published:
  // a new kColumn row is a new revision of both schemas.
  kColumn,
  kDetail,  // in the JSON and the Python dict only
};

using TensorStatsMember = std::variant<double TensorStats::*, int64_t TensorStats::*>;
using PairMetricsMember =
    std::variant<double PairMetrics::*, int64_t PairMetrics::*, bool PairMetrics::*, TensorStats PairMetrics::*>;

struct TensorStatsField {
  const char* name;
  TensorStatsMember member;
  const char* doc;
};

struct MetricField {
  const char* name;
  PairMetricsMember member;
  MetricKind kind;
  const char* doc;
  // kColumn: the row table's cell is empty (not applicable) unless this flag of the row is set.
  bool PairMetrics::*column_if = nullptr;
};

// The statistics of a pair's side that parity.compare/1 `rows[].metrics.golden_stats` / `target_stats` and
// the Python dict publish: the split ±Inf counts (not inf_count), and no numel (the pair's numel).
inline constexpr TensorStatsField kSideStatsFields[] = {
    {"min", &TensorStats::min, "smallest finite value"},
    {"max", &TensorStats::max, "largest finite value"},
    {"mean", &TensorStats::mean, "mean of the finite values"},
    {"l2norm", &TensorStats::l2norm, "L2 norm of the finite values"},
    {"std", &TensorStats::std, "population standard deviation of the finite values"},
    {"absmax", &TensorStats::absmax, "largest finite magnitude"},
    {"nan_count", &TensorStats::nan_count, "NaN elements"},
    {"pinf_count", &TensorStats::pinf_count, "+Inf elements"},
    {"ninf_count", &TensorStats::ninf_count, "-Inf elements"},
    {"zero_count", &TensorStats::zero_count, "elements exactly 0"},
    {"subnormal_count", &TensorStats::subnormal_count, "elements subnormal in the target's dtype"},
};

// In PairMetrics' order, which is also the order of the tensor-mode columns of the row table.
inline constexpr MetricField kMetricFields[] = {
    {"numel", &PairMetrics::numel, MetricKind::kDetail, "elements in each tensor"},
    {"compared", &PairMetrics::compared, MetricKind::kDetail, "elements entering the error metrics"},
    {"cosine", &PairMetrics::cosine, MetricKind::kColumn, "t·g / (‖t‖‖g‖), msprobe's Cosine"},
    {"euclidean", &PairMetrics::euclidean, MetricKind::kColumn, "‖t − g‖₂, msprobe's EucDist"},
    {"rel_l2", &PairMetrics::rel_l2, MetricKind::kColumn, "‖t − g‖₂ / ‖g‖₂"},
    {"rmse", &PairMetrics::rmse, MetricKind::kColumn, "sqrt(mean((t − g)²))"},
    {"sqnr_db", &PairMetrics::sqnr_db, MetricKind::kColumn, "10·log10(Σg² / Σ(t − g)²)"},
    {"max_abs", &PairMetrics::max_abs, MetricKind::kColumn, "max |t − g|, msprobe's MaxAbsErr"},
    {"max_abs_index", &PairMetrics::max_abs_index, MetricKind::kColumn, "flat index of the first max_abs"},
    {"mean_abs", &PairMetrics::mean_abs, MetricKind::kColumn, "mean |t − g|"},
    {"max_rel", &PairMetrics::max_rel, MetricKind::kColumn, "max |t − g| / |g|, msprobe's MaxRelativeErr"},
    {"max_rel_index", &PairMetrics::max_rel_index, MetricKind::kColumn, "flat index of the first max_rel"},
    {"thousandth_ratio", &PairMetrics::thousandth_ratio, MetricKind::kColumn, "fraction with relative error < 0.001"},
    {"five_thousandth_ratio", &PairMetrics::five_thousandth_ratio, MetricKind::kColumn,
     "fraction with relative error < 0.005"},
    {"frac_abs_gt_1e6", &PairMetrics::frac_abs_gt_1e6, MetricKind::kColumn, "fraction with |t − g| > 1e-6"},
    {"frac_abs_gt_1e4", &PairMetrics::frac_abs_gt_1e4, MetricKind::kColumn, "fraction with |t − g| > 1e-4"},
    {"frac_abs_gt_1e2", &PairMetrics::frac_abs_gt_1e2, MetricKind::kColumn, "fraction with |t − g| > 1e-2"},
    {"ulp_max", &PairMetrics::ulp_max, MetricKind::kColumn, "max |t − g| in ULPs of the target's dtype"},
    {"ulp_mean", &PairMetrics::ulp_mean, MetricKind::kColumn, "mean |t − g| in ULPs of the target's dtype"},
    {"frac_ulp_gt1", &PairMetrics::frac_ulp_gt1, MetricKind::kColumn, "fraction more than 1 ULP away"},
    {"nonfinite_agree", &PairMetrics::nonfinite_agree, MetricKind::kDetail, "NaN/±Inf positions agree"},
    {"nonfinite_mismatch", &PairMetrics::nonfinite_mismatch, MetricKind::kColumn, "positions whose non-finite class differs"},
    {"ftz_count", &PairMetrics::ftz_count, MetricKind::kColumn, "golden tiny and nonzero, target 0 (flush to zero)"},
    {"golden_stats", &PairMetrics::golden, MetricKind::kDetail, "the golden side's statistics"},
    {"target_stats", &PairMetrics::target, MetricKind::kDetail, "the target side's statistics"},
    {"kl", &PairMetrics::kl, MetricKind::kColumn, "mean over rows of KL(softmax(g) ‖ softmax(t))",
     &PairMetrics::kl_computed},
    {"kl_computed", &PairMetrics::kl_computed, MetricKind::kDetail, "whether kl was computed"},
    {"kl_rows", &PairMetrics::kl_rows, MetricKind::kDetail, "rows entering the KL mean"},
    {"kl_rows_skipped", &PairMetrics::kl_rows_skipped, MetricKind::kDetail, "rows left out of the KL mean"},
};

// Compare a golden/target pair of equal element count. Any two float (or int) dtypes. Returns an error
// for mismatched element counts; shape mismatches with equal counts are the caller's business (flagged
// in the row, compared as flat arrays).
Result<PairMetrics> compare_tensors(const TensorView& golden, const TensorView& target,
                                    const MetricOptions& options = {});

// How two runs' updates of one tensor between two steps differ: with u_g = golden_after − golden_before
// and u_t = target_after − target_before (each side's own change, e.g. one optimizer step of a
// parameter),
//   rel_error = ‖u_t − u_g‖₂ / ‖u_g‖₂     (0 when both updates are 0; +inf when only the target's is)
// computed in fp64 over all four tensors, which must hold the same number of elements. Non-finite
// values anywhere make rel_error NaN (the rows themselves report them).
// Element counts say whether the target's parameter stood still because its dtype cannot hold the step:
// of the elements the golden moved (u_g ≠ 0), those the target left exactly in place (u_t = 0), and of
// those the ones where the golden's step itself, added to the target's value in the target's float dtype,
// rounds back to that value: round_t(t_before + u_g) = t_before (|u_g| below half the dtype's spacing
// there; Micikevicius et al. 2018, "Mixed Precision Training" §3.1, why fp32 master weights exist).
struct UpdateMetrics {
  double rel_error = kNaN;
  double golden_norm = kNaN;  // ‖u_g‖₂
  double diff_norm = kNaN;    // ‖u_t − u_g‖₂
  int64_t moved = 0;          // elements with u_g ≠ 0
  int64_t stalled = 0;        // of those, u_t = 0
  int64_t lost = 0;           // of those, round_t(t_before + u_g) = t_before; 0 when the target is not a float dtype
};
Result<UpdateMetrics> compare_updates(const TensorView& golden_before, const TensorView& golden_after,
                                      const TensorView& target_before, const TensorView& target_after);

// ---- KL divergence: one row's policy and one accumulator (compare, eval ppl and scan use these) ----
// KL(P ‖ Q) = Σ p_i (log p_i − log q_i), natural log, P the golden's distribution (llama.cpp's KLD,
// tools/perplexity/perplexity.cpp). docs/metrics.md "KL divergence" has the policy in words.

// Whether a row of logits or log-probabilities defines a distribution: no NaN, no +Inf and not −Inf
// everywhere (softmax of such a row is undefined). This is THE non-finite policy of every KL in parity:
// a row pair where either side fails it has no KL (it is skipped and counted, never averaged); −Inf
// entries are masked tokens (p = 0 contributes 0; q = 0 where p > 0 makes the row's KL +Inf).
bool kl_row_has_distribution(const double* x, int64_t n);

// Which side of a row pair has no distribution (the golden is checked first).
enum class KlSkip : uint8_t { kNone = 0, kGolden = 1, kTarget = 2 };
KlSkip kl_row_skip(const double* golden, const double* target, int64_t n);

// KL(softmax(g) ‖ softmax(t)) of one row of n logits (log-probabilities work too: softmax renormalises),
// with max subtraction and pairwise sums; NaN when kl_row_skip says the row is skipped. `scratch` holds n.
double softmax_row_kl(const double* golden, const double* target, int64_t n, double* scratch);

// What an accumulator holds when finished. mean and unc follow llama.cpp's kl_divergence_result:
// mean = Σkl/n, unc = sqrt((Σkl²/n − mean²)/(n−1)) when that variance is > 0 and n > 10, else 0.
struct KlSummary {
  double mean = kNaN;      // NaN when no row was used
  double unc = kNaN;       // NaN when no row was used
  int64_t count = 0;       // rows averaged
  int64_t skipped = 0;     // rows with no KL (kl_row_skip), on either side
  int64_t skipped_target = 0;  // of those, rows whose golden had a distribution and whose target had none
  double max = kNaN;       // largest row KL averaged (+Inf possible); NaN when none
};

// llama.cpp's kl_divergence_result: add rows, then finish. Sums are fp64 in the order rows are added;
// add_rows sums its block pairwise first (compare's order), so one add_rows on an empty accumulator is
// a pairwise mean and a row-by-row add is llama.cpp's running sum.
class KlAccumulator {
 public:
  void add(double kl, KlSkip skip = KlSkip::kNone);  // a NaN kl counts as skipped (skip says whose)
  void add_rows(const double* kl, int64_t n);        // NaN entries are skipped rows
  KlSummary finish() const;
  double sum() const { return sum_; }
  double sum2() const { return sum2_; }

 private:
  void add_sums(double s, double s2, int64_t used);
  void note_skip(KlSkip skip);
  double sum_ = 0, sum2_ = 0, max_ = kNaN;
  int64_t count_ = 0, skipped_ = 0, skipped_target_ = 0;
};

// KL of `rows` row pairs of `cols` values each (row-major), rows computed in parallel on `threads`
// (0 = OpenMP's default) and added to one accumulator in row order (deterministic). Writes each row's
// KL (NaN where skipped) to kl_out and whose distribution was missing to skip_out (both `rows` long).
KlSummary kl_of_rows(const double* golden, const double* target, int64_t rows, int64_t cols, int threads,
                     double* kl_out, KlSkip* skip_out);

// llama.cpp's mean and its uncertainty from running sums (the formula of KlSummary's mean and unc, also
// eval's perplexity and Δp statistics): {0, 0} for count < 1.
struct MeanUnc {
  double mean, unc;
};
MeanUnc llama_mean_and_uncertainty(double sum, double sum2, int64_t count);

}  // namespace parity
