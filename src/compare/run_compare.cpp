// run_compare: match → measure → judge, over two RecordSources.
//
// 1. Pair records by (rank, step, name) (parity/matching.h); one-sided records become `unmatched`.
// 2. Per pair, plan the richest comparison both sides allow: tensor (both have data) > checksum (both
//    have a CRC32C of the same dtype) > statistics (stored, or computed from the data of one side) >
//    none. Element-count mismatches are row errors before anything is loaded.
// 3. Measure: pairs that are a large share of the work (kBigPairBytes) run one at a time with every
//    thread inside the fused kernel; the others are spread over the threads, one pair per thread, largest
//    first, because the kernel's own fork/join costs more than a 64 KiB pair takes to compare (issue 2 §6:
//    20,000 small pairs) and idle workers spin between fork/joins (issue 34: msprobe dumps).
//    Under a group of N processes (options.group, mpirun) each process measures a share and sends the
//    measured fields to process 0 (compare/row_exchange.h). Captures divided by rank (options.rank_shares,
//    open_divided_sources): the sources of each process but 0 hold only its ranks, so it lists, pairs,
//    plans and maps only those and sends its rows by identity; process 0, which lists everything, measures
//    its own ranks and any row nobody sent. Other inputs: every process lists and plans every row alike
//    and measures a contiguous, byte-balanced range of them (partition_by_bytes), sent by row index.
//    Either way process 0 ends with the very rows one process would have measured — the metrics kernel
//    gives the same bits for any thread count — and everything after run_compare runs on it unchanged.
// 4. Judge each row (compare/judge.h) with the thresholds of the pair's lower-precision dtype: the
//    fixed-threshold verdict. The noise-model policy is applied later (compare_runs, verdict_policy.h).
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cctype>
#include <cmath>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "compare/boolean_mask.h"
#include "compare/judge.h"
#include "fmt/format.h"
#include "compare/loss_scale_rows.h"
#include "compare/measure_updates.h"
#include "compare/row_exchange.h"
#include "parity/compare.h"
#include "parity/matching.h"
#include "parity/resources.h"
#include "parity/verdict_policy.h"

namespace parity {

namespace {

// A pair is compared alone with all threads only when it is at least kBigPairBytes (both sides together)
// and at least 1 / (kSharesPerThread * jobs) of all the bytes to measure; every other pair goes to one
// thread. Each pair measured alone is one fork/join, and between two of them the main thread loads the
// next pair while libgomp's idle workers spin (about 15 ms per wait at the default spin count): on
// msprobe's dumps (~1,900 pairs of 1-16 MiB) that spinning took 75 % of the command's CPU and, with the
// two cores shared, 8 s of wall instead of 1 s (docs/benchmarks.md, issue 34). A pair that large a share
// of the work would leave threads idle at the end if it went to one of them.
constexpr int64_t kBigPairBytes = int64_t{1} << 20;
constexpr int64_t kSharesPerThread = 8;

struct RowPlan {
  size_t row = 0;
  bool kl = false;
  bool load_golden = false, load_target = false;  // statistics mode computed from data
  int64_t bytes = 0;                              // bytes read to measure this row
  int64_t update_bytes = 0;  // bytes read again to measure its parameter update (the earlier step's pair)
};

int64_t record_bytes(const Record& r) {
  Result<int64_t> n = shape_numel(r.shape);
  return n.ok() ? *n * dtype_size(r.dtype) : 0;
}

bool looks_like_logits(const std::string& name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("logits") != std::string::npos;
}

// Load a record's tensor, making sure the message names the file and that the data has the element
// count the listing promised (a reader that disagrees with itself must not crash the kernel).
Result<TensorView> load_checked(const RecordSource& src, const Record& r, int64_t expected_numel) {
  Result<TensorView> v = src.load(r);
  if (!v.ok()) {
    Status st = v.status();  // status() returns a copy: keep it alive while its message is searched
    if (!r.file.empty() && st.message().find(r.file) == std::string::npos) return st.WithContext(r.file);
    return st;
  }
  if (v->numel != expected_numel) {
    return Status::Invalid((r.file.empty() ? r.name : r.file) + ": tensor '" + r.name + "' holds " +
                           std::to_string(v->numel) + " elements, its header says " +
                           std::to_string(expected_numel));
  }
  return v;
}

// The transpose of a 2-D view, as a strided view of the same bytes, when it has `want` as its shape
// (square shapes only when `square` allows them: their transpose has the same shape).
std::optional<TensorView> transposed_view(const TensorView& t, const Shape& want, bool square) {
  if (t.shape.size() != 2 || want.size() != 2 || t.shape[0] != want[1] || t.shape[1] != want[0] ||
      (t.shape[0] == t.shape[1] && !square))
    return std::nullopt;
  TensorView v = t;
  const std::vector<int64_t> strides = t.strides.empty() ? std::vector<int64_t>{t.shape[1], 1} : t.strides;
  v.shape = {t.shape[1], t.shape[0]};
  v.strides = {strides[1], strides[0]};
  return v;
}

// "512 backward rows compared after unscaling the target: × 2^-12 (step 0, rank 0), × 2^-11 (step 1, rank 0)".
std::string loss_scale_note(const std::vector<LossScale>& scales, int64_t rows) {
  std::string text = std::to_string(rows) + " backward rows compared after unscaling the target (loss scale, "
                     "docs/judgement.md):";
  for (size_t i = 0; i < scales.size(); ++i)
    text += (i ? ", " : " ") + ("× 2^" + std::to_string(-scales[i].evidence.log2_ratio)) + " (step " +
            std::to_string(scales[i].step) + ", rank " + std::to_string(scales[i].rank) + ")";
  return text;
}

// What a loss-scaled row's reason starts with: "target × 2^-12 (loss scale); ".
std::string loss_scale_prefix(const CompareRow& row) {
  if (row.loss_scale_log2 == 0) return "";
  return "target × 2^" + std::to_string(-row.loss_scale_log2) + " (loss scale); ";
}

// Masks filled with torch.finfo(dtype).min — "minus infinity" in each run's own dtype: −3.4e38 in an fp32
// run, −65504 in an fp16 one. Both sides reaching their own dtype's extreme (of two different float dtypes)
// is that pattern: the pair is measured again with the extremes read as ±inf (MetricOptions::
// extremes_as_infinities), and the reason says so.
// A side "reaches" −∞ when it holds −finfo.max of its dtype or −inf itself: a mask value plus a score overflows
// to −inf in fp16 (GPT-J, GPT-Neo) where fp32 stays at −3.4e38. Of one dtype, the pair qualifies when one
// side holds the extreme and the other −inf instead (GPT-Neo's fp32 golden overflows its mask sum to −inf
// where its fp16-autocast target keeps −3.4e38).
bool holds_dtype_extremes(const PairMetrics& m, DType golden, DType target) {
  const FloatFormat *fg = float_format(golden), *ft = float_format(target);
  if (fg == nullptr || ft == nullptr) return false;
  const bool g_lo = m.golden.min == -fg->max_finite, t_lo = m.target.min == -ft->max_finite;
  const bool g_hi = m.golden.max == fg->max_finite, t_hi = m.target.max == ft->max_finite;
  if (fg->max_finite == ft->max_finite)  // one dtype: one side's mask overflowed to ±inf, the other's did not
    return (g_lo && m.golden.ninf_count == 0 && m.target.ninf_count > 0) ||
           (t_lo && m.target.ninf_count == 0 && m.golden.ninf_count > 0) ||
           (g_hi && m.golden.pinf_count == 0 && m.target.pinf_count > 0) ||
           (t_hi && m.target.pinf_count == 0 && m.golden.pinf_count > 0);
  return ((g_lo || t_lo) && (g_lo || m.golden.ninf_count > 0) && (t_lo || m.target.ninf_count > 0)) ||
         ((g_hi || t_hi) && (g_hi || m.golden.pinf_count > 0) && (t_hi || m.target.pinf_count > 0));
}

// The same mask where the narrower dtype's extreme was stored after arithmetic in a wider dtype: one side
// reaches its own −∞ (−finfo.max or −inf), the other's most negative value lies within a factor 2 of an
// fp16/fp8 extreme it cannot be an extreme of (finfo(fp16).min + score kept in fp32 = −65504.08: GPT-J,
// GPT-Neo in fp16). That side's values from half that extreme read as ±inf; positions still have to agree
// (a sentinel facing an ordinary value is a non-finite mismatch), so real data near 65504 at a position
// the other side holds finite is still an error. Returns the magnitudes (golden, target) or nullopt.
std::optional<std::pair<double, double>> narrow_mask_sentinels(const PairMetrics& m, DType golden, DType target) {
  const FloatFormat *fg = float_format(golden), *ft = float_format(target);
  if (fg == nullptr || ft == nullptr) return std::nullopt;
  auto reaches_minus_inf = [](const TensorStats& s, const FloatFormat* f) {
    return s.ninf_count > 0 || s.min == -f->max_finite;
  };
  // The narrow extreme one side's minimum sits at (from below, rounding and data added), or 0.
  auto narrow_extreme = [](const TensorStats& s, const FloatFormat* own) {
    for (DType narrow : {DType::kF16, DType::kF8E5M2, DType::kF8E4M3}) {
      const FloatFormat* f = float_format(narrow);
      if (f == nullptr || f->max_finite >= own->max_finite) continue;
      if (s.min <= -0.5 * f->max_finite && s.min >= -f->max_finite * (1 + 0x1p-10)) return f->max_finite;
    }
    return 0.0;
  };
  if (reaches_minus_inf(m.golden, fg))
    if (const double x = narrow_extreme(m.target, ft); x > 0) return std::pair{0.0, 0.5 * x};
  if (reaches_minus_inf(m.target, ft))
    if (const double x = narrow_extreme(m.golden, fg); x > 0) return std::pair{0.5 * x, 0.0};
  return std::nullopt;
}

std::string extremes_prefix(DType golden, DType target) {
  return fmt::format("each dtype's extreme finite value read as ±inf (a finfo.min mask: {:.4g} in {}, {:.4g} in {}); ",
                     -float_format(golden)->max_finite, dtype_name(golden), -float_format(target)->max_finite,
                     dtype_name(target));
}

void set_error(CompareRow& row, const Status& st) {
  row.verdict = Verdict::kError;
  row.reason = st.message();
}

// How a tensor pair's masks and dtype extremes were read (measure_tensor_row), and the reason's prefix
// that says so.
struct MaskReading {
  std::optional<compare::BooleanMaskReading> boolean_mask;
  std::optional<std::pair<double, double>> narrow;  // golden / target sentinel (0: none on that side)
  bool extremes = false;

  std::string note(const CompareRow& row) const {
    if (boolean_mask) return boolean_mask->note;
    if (narrow)
      return fmt::format("a narrow dtype's finfo.min mask stored after arithmetic: {} values beyond ±{:.6g} read "
                         "as ±inf; ", narrow->first > 0 ? "golden" : "target",
                         narrow->first > 0 ? narrow->first : narrow->second);
    if (extremes) return extremes_prefix(row.golden->dtype, row.target->dtype);
    return "";
  }
};

// The pair's metrics with its masks read as what they stand for. A boolean mask facing the additive
// mask it stands for (eager vs SDPA attention) is compared as that; a tensor holding its dtype's
// extremes has them read as ±inf; and a narrow dtype's mask can remain once the extremes are read
// (GPT-Neo under fp16 autocast: −3.4e38 and −65504 in one fp32 tensor): looked for on the latest reading.
Result<PairMetrics> read_with_masks(const CompareRow& row, TensorView& g, TensorView& t, MetricOptions& mo,
                                    MaskReading& r) {
  r.boolean_mask = compare::read_boolean_mask(g, t);
  if (r.boolean_mask) {
    (r.boolean_mask->golden_is_boolean ? g : t) = r.boolean_mask->additive;
    mo.extremes_as_infinities = true;
    (r.boolean_mask->golden_is_boolean ? mo.target_infinity_from : mo.golden_infinity_from) =
        std::fabs(r.boolean_mask->masked_value);
  }
  Result<PairMetrics> m = compare_tensors(g, t, mo);
  if (!m.ok() || r.boolean_mask) return m;
  r.extremes = holds_dtype_extremes(*m, row.golden->dtype, row.target->dtype);
  if (r.extremes) {
    mo.extremes_as_infinities = true;
    m = compare_tensors(g, t, mo);
    if (!m.ok()) return m;
  }
  r.narrow = narrow_mask_sentinels(*m, row.golden->dtype, row.target->dtype);
  if (r.narrow) {
    mo.extremes_as_infinities = true;
    std::tie(mo.golden_infinity_from, mo.target_infinity_from) = *r.narrow;
    m = compare_tensors(g, t, mo);
    r.extremes = true;
  }
  return m;
}

// A 2-D tensor stored transposed on one side (Hugging Face's Conv1D keeps [in, out] where nn.Linear
// keeps [out, in]) holds the same numbers in another layout: compared flat it looks like noise. Its
// transpose is compared too, and the closer reading kept, with the layout named in the row. A square
// parameter (or its gradient) can be stored transposed with the same shape: its transpose is kept only
// when it is a near-exact match (100× closer) — whether the layer then computes the same function is for
// its output rows to say (WEIGHT_MISMATCH names a transposed weight whose layer differs).
void prefer_transposed_layout(CompareRow& row, const TensorView& g, const TensorView& t, const MetricOptions& mo,
                              PairMetrics& m) {
  const bool square_param = (row.golden->role == "parameter" || row.golden->role == "grad") &&
                            row.golden->shape.size() == 2 &&
                            row.golden->shape == row.target->shape && row.golden->shape[0] == row.golden->shape[1];
  // (Only when the flat reading is far off: a transposed matrix compared flat has rel L2 ≈ √2.)
  const bool worth_it = !square_param || m.rel_l2 > 0.1;
  std::optional<TensorView> tt = worth_it ? transposed_view(t, row.golden->shape, square_param) : std::nullopt;
  if (!tt) return;
  Result<PairMetrics> mt = compare_tensors(g, *tt, mo);
  if (mt.ok() && mt->rel_l2 < (square_param ? 0.01 : 1.0) * m.rel_l2) {
    m = std::move(mt).value();
    row.layout_note = "target stored transposed (" + shape_to_string(row.target->shape) + " vs golden " +
                      shape_to_string(row.golden->shape) + "), compared as its transpose";
  }
}

// A tensor-mode row: both tensors loaded, metrics of the fused kernel, judged by the dtype's thresholds.
void measure_tensor_row(CompareRow& row, const RowPlan& plan, const RecordSource& golden, const RecordSource& target,
                        const DTypeThresholds& th, int64_t numel, int threads) {
  Result<TensorView> g = load_checked(golden, *row.golden, numel);
  if (!g.ok()) return set_error(row, g.status());
  Result<TensorView> t = load_checked(target, *row.target, numel);
  if (!t.ok()) return set_error(row, t.status());
  MetricOptions mo;
  mo.kl = plan.kl;
  mo.threads = threads;
  mo.target_scale_log2 = row.loss_scale_log2;  // a loss-scaled gradient is compared unscaled
  MaskReading masks;
  Result<PairMetrics> m = read_with_masks(row, *g, *t, mo, masks);
  if (!m.ok()) return set_error(row, m.status().WithContext(row.golden->name));
  prefer_transposed_layout(row, *g, *t, mo, *m);
  row.metrics = std::move(m).value();
  compare::Judgement j = compare::judge_tensor(*row.metrics, th);
  row.verdict = j.verdict;
  row.reason = loss_scale_prefix(row) + masks.note(row) + j.reason;
}

// A statistics-mode row. A side whose record stores no statistics is compared by those of its tensor
// data, kept in the row.
void measure_statistics_row(CompareRow& row, const RowPlan& plan, const RecordSource& golden,
                            const RecordSource& target, const DTypeThresholds& th, int64_t numel) {
  Boxed<TensorStats> golden_computed, target_computed;
  if (plan.load_golden) {
    Result<TensorView> g = load_checked(golden, *row.golden, numel);
    if (!g.ok()) return set_error(row, g.status());
    golden_computed = compute_stats(*g);
  }
  if (plan.load_target) {
    Result<TensorView> t = load_checked(target, *row.target, numel);
    if (!t.ok()) return set_error(row, t.status());
    target_computed = compute_stats(*t);
  }
  // A loss-scaled gradient is compared unscaled: its compared statistics are held by the row.
  if (row.loss_scale_log2 != 0)
    target_computed = scale_stats(target_computed ? *target_computed : *row.target->stats, -row.loss_scale_log2);
  const TensorStats& gs = golden_computed ? *golden_computed : *row.golden->stats;
  const TensorStats& ts = target_computed ? *target_computed : *row.target->stats;
  compare::Judgement j = compare::judge_stats(gs, ts, compare::compare_stats(gs, ts), th);
  row.stats = StatsComparison{std::move(golden_computed), std::move(target_computed)};
  row.verdict = j.verdict;
  row.reason = loss_scale_prefix(row) + j.reason;
}

// Measure and judge one planned row. Never throws: an unexpected exception becomes a row error.
void measure_row(CompareRow& row, const RowPlan& plan, const RecordSource& golden,
                 const RecordSource& target, const Thresholds& thresholds, int threads) {
  try {
    const DTypeThresholds& th = thresholds.for_dtype(lower_precision(row.golden->dtype, row.target->dtype));
    const int64_t numel = shape_numel(row.golden->shape).ValueOr(0);
    if (row.mode == CompareMode::kTensor)
      measure_tensor_row(row, plan, golden, target, th, numel, threads);
    else if (row.mode == CompareMode::kStatistics)
      measure_statistics_row(row, plan, golden, target, th, numel);
  } catch (const std::exception& e) {
    row.verdict = Verdict::kError;
    row.reason = std::string("internal error while comparing: ") + e.what();
  }
}

std::string has_what(const Record& r) {
  std::vector<std::string> parts;
  if (r.has_data) parts.push_back("tensor data");
  if (r.stats) parts.push_back("statistics");
  if (r.crc32c) parts.push_back("a checksum");
  if (parts.empty()) return "nothing";
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "" : (i + 1 == parts.size() ? " and " : ", ")) + parts[i];
  return out;
}

// Decide what a pair is compared by. Returns false (and sets the row's verdict) when nothing can be.
// `note` receives a description of a mode mismatch, aggregated into result.notes by the caller.
bool plan_row(CompareRow& row, RowPlan& plan, const std::vector<NamePattern>& kl_patterns, std::string& note) {
  const Record& g = *row.golden;
  const Record& t = *row.target;
  Result<int64_t> gn = shape_numel(g.shape);
  Result<int64_t> tn = shape_numel(t.shape);
  if (!gn.ok() || !tn.ok()) {
    row.verdict = Verdict::kError;
    row.reason = (!gn.ok() ? gn.status().WithContext(g.file) : tn.status().WithContext(t.file)).message();
    return false;
  }
  if (*gn != *tn) {
    row.verdict = Verdict::kError;
    row.reason = "shapes differ: golden " + shape_to_string(g.shape) + " vs target " + shape_to_string(t.shape);
    return false;
  }
  row.shape_differs = g.shape != t.shape;

  if (g.has_data && t.has_data) {
    row.mode = CompareMode::kTensor;
    plan.bytes = record_bytes(g) + record_bytes(t);
    const bool can_kl = dtype_is_float(g.dtype) && dtype_is_float(t.dtype) && !g.shape.empty();
    bool want = looks_like_logits(g.name);
    for (const NamePattern& p : kl_patterns) want = want || p.search(g.name);
    plan.kl = can_kl && want;
    return true;
  }
  if (g.crc32c && t.crc32c && g.dtype == t.dtype) {
    row.mode = CompareMode::kChecksum;
    row.checksum_equal = *g.crc32c == *t.crc32c;
    if (g.stats && t.stats) row.stats = StatsComparison{};  // both stored: stats_differences reads them
    compare::Judgement j = compare::judge_checksum(*g.crc32c, *t.crc32c);
    row.verdict = j.verdict;
    row.reason = std::move(j.reason);
    if (g.has_data != t.has_data) {
      note = std::string("compared by checksum: only the ") + (g.has_data ? "golden" : "target") + " side has tensor data";
    }
    return false;  // judged already; nothing to load
  }
  if ((g.stats || g.has_data) && (t.stats || t.has_data)) {
    row.mode = CompareMode::kStatistics;
    plan.load_golden = !g.stats;
    plan.load_target = !t.stats;
    plan.bytes = (plan.load_golden ? record_bytes(g) : 0) + (plan.load_target ? record_bytes(t) : 0);
    if (g.has_data || t.has_data) {
      note = std::string("compared by statistics: only the ") + (g.has_data ? "golden" : "target") +
             " side has tensor data" +
             (plan.load_golden || plan.load_target ? " (its statistics were computed from the data)" : "");
    }
    if (g.crc32c && t.crc32c && g.dtype != t.dtype) {
      note = "compared by statistics: checksums of different dtypes cannot be compared";
    }
    return true;
  }
  row.mode = CompareMode::kNone;
  row.verdict = Verdict::kError;
  row.reason = "nothing both sides share to compare: golden has " + has_what(g) + ", target has " + has_what(t);
  note = "not compared: golden has " + has_what(g) + ", target has " + has_what(t);
  return false;
}

// Keeps in `plans` (in row order) this process's share: the planned rows split into contiguous
// byte-balanced ranges, one per process. Returns which rows are this process's.
std::vector<char> keep_my_share(std::vector<RowPlan>& plans, size_t rows, const ProcessGroup& group) {
  std::vector<int64_t> bytes;
  bytes.reserve(plans.size());
  for (const RowPlan& p : plans) bytes.push_back(p.bytes + p.update_bytes);
  const std::vector<int> owner = partition_by_bytes(bytes, group.size());
  std::vector<RowPlan> mine_plans;
  std::vector<char> mine(rows, 0);
  for (size_t i = 0; i < plans.size(); ++i) {
    if (owner[i] != group.rank()) continue;
    mine_plans.push_back(plans[i]);
    mine[plans[i].row] = 1;
  }
  plans = std::move(mine_plans);
  return mine;
}

// Moves the items of `from` for which `pred` holds to `to`, keeping the order of both.
template <typename T, typename Pred>
void split_off(std::vector<T>& from, std::vector<T>& to, Pred pred) {
  std::vector<T> keep;
  for (T& x : from) (pred(x) ? to : keep).push_back(std::move(x));
  from = std::move(keep);
}

// Measures the planned rows and then their parameter updates. Large pairs (kBigPairBytes) run one at a
// time with every thread inside the kernel; the others one per thread, dynamically scheduled (sizes
// vary 64x).
void measure_planned(CompareResult& res, const std::vector<RowPlan>& plans,
                     const std::vector<compare::UpdatePair>& updates, const RecordSource& golden,
                     const RecordSource& target, int jobs, ProgressSink* progress) {
  std::vector<RowPlan> big, small;
  int64_t total_bytes = 0;
  for (const RowPlan& p : plans) total_bytes += p.bytes;
  const int64_t big_from = std::max(kBigPairBytes, total_bytes / (kSharesPerThread * std::max(jobs, 1)));
  for (const RowPlan& p : plans) (p.bytes >= big_from ? big : small).push_back(p);
  // Largest first, so that the last pairs a thread takes are small and the threads finish together.
  std::stable_sort(small.begin(), small.end(), [](const RowPlan& a, const RowPlan& b) { return a.bytes > b.bytes; });
  if (progress) progress->begin("comparing", total_bytes, "B");
  for (const RowPlan& plan : big) {
    measure_row(res.rows[plan.row], plan, golden, target, res.thresholds, jobs);
    if (progress) progress->advance(plan.bytes);
  }
  const int64_t n_small = static_cast<int64_t>(small.size());
#pragma omp parallel for schedule(dynamic, 4) num_threads(jobs) if (n_small > 1 && jobs > 1)
  for (int64_t i = 0; i < n_small; ++i) {
    const RowPlan& plan = small[static_cast<size_t>(i)];
    measure_row(res.rows[plan.row], plan, golden, target, res.thresholds, 1);
    if (progress) progress->advance(plan.bytes);
  }
  compare::measure_parameter_updates(res.rows, updates, golden, target, jobs);
  if (progress) progress->end();
}

// Rows a message carries: ~13 MB of measured fields at ~200 bytes a row, so that neither a sender nor
// process 0 holds more than one such message (a share's rows in one message were ~100 MB at 1,000,000
// rows over two processes, and process 0 held every process's at once).
constexpr size_t kRowsPerMessage = size_t{1} << 16;

// Sends the rows this process measured (`measured`) to process 0 in messages of kRowsPerMessage rows,
// which process 0 writes into its result's rows as they arrive (marking them in `received`, when given),
// keeping each process's peak memory.
Status gather_measured_rows(CompareResult& result, const std::vector<RowPlan>& measured, compare::RowAddress address,
                            std::vector<char>* received, const ProcessGroup& group) {
  if (!group.is_root()) {
    size_t at = 0;
    bool sent = false;
    std::vector<size_t> rows;
    auto next = [&](std::string& message) {
      if (sent && at >= measured.size()) return false;  // at least one message: it carries the peak
      const size_t end = std::min(measured.size(), at + kRowsPerMessage);
      rows.clear();
      for (; at < end; ++at) rows.push_back(measured[at].row);
      message = compare::encode_measured_rows(result.rows, rows, peak_resident_bytes(), address);
      sent = true;
      return true;
    };
    return group.gather_each(next, [](int, std::string&) { return Status::OK(); });
  }
  // Rows sharing one identity cannot be told apart in a message: none is taken from it (process 0
  // measures them itself).
  const compare::RowsByIdentity by_identity = address == compare::RowAddress::kIdentity
                                                  ? compare::RowsByIdentity(result.rows)
                                                  : compare::RowsByIdentity();
  result.peak_resident_bytes.assign(static_cast<size_t>(group.size()), 0);
  auto consume = [&](int from, std::string& message) -> Status {
    Result<int64_t> peak = compare::apply_measured_rows(message, result.rows, &by_identity, received);
    if (!peak.ok()) return peak.status().WithContext("process " + std::to_string(from));
    int64_t& kept = result.peak_resident_bytes[static_cast<size_t>(from)];
    kept = std::max(kept, *peak);
    return Status::OK();
  };
  return group.gather_each([](std::string&) { return false; }, consume);
}

// Under a group, every process having planned every row: measures this process's byte share and sends
// it to process 0 by row index.
Status measure_byte_share(CompareResult& res, std::vector<RowPlan> plans, std::vector<compare::UpdatePair> updates,
                          const RecordSource& golden, const RecordSource& target, int jobs,
                          const CompareOptions& options) {
  const std::vector<char> mine = keep_my_share(plans, res.rows.size(), *options.group);
  std::erase_if(updates, [&](const compare::UpdatePair& u) { return !mine[u.after]; });
  measure_planned(res, plans, updates, golden, target, jobs, options.progress);
  return gather_measured_rows(res, plans, compare::RowAddress::kIndex, nullptr, *options.group);
}

// Under a group dividing captures by rank: each process's sources hold its own ranks (process 0's hold
// everything); it measures the rows of those ranks and sends them by identity, and process 0 measures
// itself any row nobody sent (counted in rows_measured_for_others).
Status measure_rank_share(CompareResult& res, std::vector<RowPlan> plans, std::vector<compare::UpdatePair> updates,
                          const RecordSource& golden, const RecordSource& target, int jobs,
                          const CompareOptions& options) {
  const ProcessGroup& group = *options.group;
  const std::vector<int>& own = options.rank_shares->ranks[static_cast<size_t>(group.rank())];
  std::vector<char> mine(res.rows.size(), 0);
  for (size_t i = 0; i < res.rows.size(); ++i)
    mine[i] = !group.is_root() || std::binary_search(own.begin(), own.end(), res.rows[i].golden->rank);
  std::vector<RowPlan> others;
  std::vector<compare::UpdatePair> others_updates;
  split_off(plans, others, [&](const RowPlan& p) { return !mine[p.row]; });
  split_off(updates, others_updates, [&](const compare::UpdatePair& u) { return !mine[u.after]; });
  measure_planned(res, plans, updates, golden, target, jobs, options.progress);
  std::vector<char> received(res.rows.size(), 0);
  PARITY_RETURN_NOT_OK(gather_measured_rows(res, plans, compare::RowAddress::kIdentity, &received, group));
  if (!group.is_root()) return Status::OK();
  std::erase_if(others, [&](const RowPlan& p) { return received[p.row]; });
  std::erase_if(others_updates, [&](const compare::UpdatePair& u) { return received[u.after]; });
  res.rows_measured_for_others = static_cast<int64_t>(others.size());
  measure_planned(res, others, others_updates, golden, target, jobs, nullptr);
  return Status::OK();
}

}  // namespace

namespace {

// An op event (named "<module>/<op>#k/<direction>/<role>/<index>") recorded inside a module.
bool is_op_event(const Record& r) {
  return !r.module.empty() && !r.op.empty() && r.name.find("/" + r.op + "#") != std::string::npos;
}

// An input or output of a module call itself (named "<module>[#k]/<direction>/<role>/<index>"), below the
// model's root. Two implementations of one module may take or return different extra tensors — Hugging
// Face's eager attention gets a mask and returns its attention weights, its sdpa attention neither — while
// the module's compared outputs carry the verdict on what it computes. The root's inputs and outputs are
// the model's own: one missing there still fails. Parameters, buffers and gradients never count here.
bool is_module_io_event(const Record& r) {
  if (r.module.empty() || r.module == "<root>" || (r.role != "input" && r.role != "output") || is_op_event(r))
    return false;
  const size_t n = r.module.size();
  return r.name.size() > n && r.name.starts_with(r.module) && (r.name[n] == '/' || r.name[n] == '#');
}

}  // namespace

namespace {

// The gradient of a model output that reached it on one side only, while that output is compared on both:
// the loss was computed from another tensor than the one returned (the HF Trainer's mixed precision returns
// an fp32 copy of the bf16 logits its loss was computed from). Which gradients the parameters got is told
// by their own records: a gradient lost inside the model leaves them unmatched, and fails the run there.
bool is_output_gradient_of_compared_output(const Record& r, const std::set<std::tuple<int, int64_t, int>>& outputs) {
  return r.module == "<root>" && r.direction == "backward" && r.role == "input" &&
         outputs.count({r.rank, r.step, r.index});
}

}  // namespace

int64_t count_implementation_records(const CompareResult& result, bool golden_side) {
  // Modules compared on both sides: ops they run on one side only, and extra tensors they take or return on
  // one side only, are how they are computed there.
  std::set<std::string> compared_modules;
  std::set<std::tuple<int, int64_t, int>> compared_model_outputs;  // (rank, step, index) of <root> outputs
  for (const CompareRow& row : result.rows) {
    if (row.golden->module == row.target->module && !row.golden->module.empty() && row.mode != CompareMode::kNone)
      compared_modules.insert(row.golden->module);
    const Record& g = *row.golden;
    if (g.module == "<root>" && g.direction == "forward" && g.role == "output" && row.mode != CompareMode::kNone)
      compared_model_outputs.insert({g.rank, g.step, g.index});
  }
  int64_t n = 0;
  for (const Record& r : golden_side ? result.unmatched_golden : result.unmatched_target)
    if (((is_op_event(r) || is_module_io_event(r)) && compared_modules.count(r.module)) ||
        is_output_gradient_of_compared_output(r, compared_model_outputs) ||
        is_loss_scale_op_record(r, result.loss_scales))  // how that side scales its loss (parity/loss_scale.h)
      ++n;
  return n;
}

CompareSummary summarize_compare(const CompareResult& result) {
  CompareSummary s;
  s.rows = static_cast<int64_t>(result.rows.size());
  Verdict worst = Verdict::kPass;
  for (const CompareRow& r : result.rows) {
    switch (r.verdict) {
      case Verdict::kPass: ++s.pass; break;
      case Verdict::kWarn: ++s.warn; break;
      case Verdict::kFail: ++s.fail; break;
      case Verdict::kError: ++s.error; break;
    }
    worst = std::max(worst, r.verdict);
  }
  s.unmatched_golden = static_cast<int64_t>(result.unmatched_golden.size());
  s.unmatched_target = static_cast<int64_t>(result.unmatched_target.size());
  s.unmatched_implementation = count_implementation_records(result, true) + count_implementation_records(result, false);
  s.problems = static_cast<int64_t>(result.problems.size());
  // What could not be compared cannot be shown equivalent: a record present on one side only fails the
  // run, unless it is an op inside a module compared on both sides (an implementation detail: a fused
  // op, an extra cast) or an extra input / output of such a module (below the root); an unreadable file
  // is an error. Neither can ever pass.
  if (s.unmatched_golden + s.unmatched_target > s.unmatched_implementation) worst = std::max(worst, Verdict::kFail);
  if (s.problems > 0) worst = std::max(worst, Verdict::kError);
  s.verdict = worst;
  return s;
}

namespace {

// Applies the name filter to a pairing made over the whole selection: unmatched records it hides are
// dropped, and so are the pairs it hides, except those the shown rows' verdicts depend on
// (decision_context), which stay, marked true in the returned vector (parallel to the pairs left).
// `filtered` counts the records of both sides the view hides, context pairs included.
std::vector<bool> apply_view(const matching::RecordFilter& view, const RecordList& grecs, const RecordList& trecs,
                             matching::ExactPairing& pairing, std::vector<matching::PairMatch>& matches) {
  std::vector<bool> hidden(pairing.pairs.size());
  std::vector<const Record*> golden(pairing.pairs.size());
  for (size_t k = 0; k < pairing.pairs.size(); ++k) {
    const auto [i, j] = pairing.pairs[k];
    hidden[k] = !view.keeps(grecs[i]) && !view.keeps(trecs[j]);
    golden[k] = &grecs[i];
  }
  const std::vector<bool> needed = decision_context(golden, hidden);
  std::vector<std::pair<size_t, size_t>> pairs;
  std::vector<matching::PairMatch> kept_matches;
  std::vector<bool> context;
  for (size_t k = 0; k < pairing.pairs.size(); ++k) {
    if (hidden[k]) {
      ++pairing.filtered_golden;
      ++pairing.filtered_target;
      if (!needed[k]) continue;
    }
    pairs.push_back(pairing.pairs[k]);
    kept_matches.push_back(matches[k]);
    context.push_back(hidden[k]);
  }
  pairing.pairs = std::move(pairs);
  matches = std::move(kept_matches);
  for (auto [unmatched, recs, count] : {std::tuple{&pairing.unmatched_golden, &grecs, &pairing.filtered_golden},
                                        std::tuple{&pairing.unmatched_target, &trecs, &pairing.filtered_target}}) {
    const size_t before = unmatched->size();
    std::erase_if(*unmatched, [&](size_t i) { return !view.keeps((*recs)[i]); });
    *count += static_cast<int64_t>(before - unmatched->size());
  }
  return context;
}

// Moves the rows measured only as context out of res.rows into res.context (row order kept in both).
void set_context_aside(CompareResult& res, const std::vector<bool>& context) {
  if (context.empty()) return;
  RowList shown;
  for (size_t k = 0; k < res.rows.size(); ++k) (context[k] ? res.context : shown).push_back(std::move(res.rows[k]));
  res.rows = std::move(shown);
}

}  // namespace

namespace {

// Compiled once: the --kl patterns, and the view the name filter keeps.
struct ComparePatterns {
  std::vector<NamePattern> kl;
  matching::RecordFilter view{-1, -1, "", {}, {}};
  bool name_filter = false;
};

Result<ComparePatterns> compile_patterns(const CompareOptions& options) {
  ComparePatterns out;
  for (const std::string& p : options.kl_patterns) {
    Result<NamePattern> re = NamePattern::compile(p);
    if (!re.ok()) return re.status().WithContext("--kl");
    out.kl.push_back(std::move(*re));
  }
  out.view.direction = options.direction;
  for (const auto& [patterns, into, flag] : {std::tuple{&options.include, &out.view.include, "--include"},
                                             std::tuple{&options.exclude, &out.view.exclude, "--exclude"}}) {
    for (const std::string& p : *patterns) {
      Result<NamePattern> re = NamePattern::compile(p);
      if (!re.ok()) return re.status().WithContext(flag);
      into->push_back(std::move(*re));
    }
  }
  out.name_filter = !out.view.direction.empty() || !out.view.include.empty() || !out.view.exclude.empty();
  return out;
}

// What the result says of its two sources before anything is compared.
void describe_sources(CompareResult& res, const RecordSource& golden, const RecordSource& target,
                      const CompareOptions& options) {
  res.golden_source = golden.describe();
  res.target_source = target.describe();
  res.thresholds = options.thresholds;
  res.golden_fingerprint = golden.fingerprint_json();
  res.target_fingerprint = target.fingerprint_json();
  for (const Status& st : golden.problems()) res.problems.push_back(st);
  res.golden_problems = static_cast<int64_t>(res.problems.size());
  for (const Status& st : target.problems()) res.problems.push_back(st);
}

// The records paired: exact names, then the --map rules, then order-based alignment of capture events
// (parity/matching.h, docs/alignment.md).
struct Pairing {
  matching::ExactPairing exact;
  std::vector<matching::PairMatch> matches;
  std::vector<bool> context;  // parallel to exact.pairs once the view is applied
};

// --step and --rank choose what is compared; the name filter (--direction, --include, --exclude) only
// what is shown: records are paired over the whole (rank, step) selection, so that a filter never changes
// which records pair, nor the verdict of a row it keeps (issue 28 §6).
Result<Pairing> pair_records(const RecordList& grecs, const RecordList& trecs, const ComparePatterns& patterns,
                             const CompareOptions& options, std::vector<std::string>& notes) {
  Pairing out;
  const matching::RecordFilter scope{options.step, options.rank, "", {}, {}};
  out.exact = matching::pair_exact(grecs, trecs, scope);
  if (options.align) {
    const int64_t released = matching::release_diverging_op_sequences(grecs, trecs, out.exact);
    if (released > 0)
      notes.push_back(std::to_string(released) + " module calls run a different op sequence in the target: their "
                      "ops that run a different number of times are paired by order alignment, not by name "
                      "(docs/alignment.md)");
  }
  std::optional<matching::NameMap> name_map;
  if (!options.map_file.empty()) {
    Result<matching::NameMap> m = matching::load_name_map(options.map_file);
    if (!m.ok()) return m.status();
    name_map = std::move(*m);
  }
  out.matches = matching::extend_pairing(grecs, trecs, out.exact, name_map ? &*name_map : nullptr, options.align, {},
                                         notes);
  if (patterns.name_filter) out.context = apply_view(patterns.view, grecs, trecs, out.exact, out.matches);
  if (out.exact.single_by_position)
    notes.push_back("each side holds a single tensor ('" + grecs[out.exact.pairs[0].first].name + "', '" +
                    trecs[out.exact.pairs[0].second].name + "'): paired although their names differ");
  return out;
}

// Say when a filter could not apply to a side (plain files carry no step or rank), and what filters left out.
void note_filters(CompareResult& res, const RecordList& grecs, const RecordList& trecs,
                  const matching::ExactPairing& pairing, const CompareOptions& options) {
  auto filter_note = [&](const RecordList& recs, const char* side) {
    const bool any_step = std::any_of(recs.begin(), recs.end(), [](const Record& r) { return r.step >= 0; });
    const bool any_rank = std::any_of(recs.begin(), recs.end(), [](const Record& r) { return r.rank >= 0; });
    if (options.step >= 0 && !any_step && !recs.empty())
      res.notes.push_back(std::string("--step ") + std::to_string(options.step) + " does not apply to the " + side +
                          " side: its records carry no step");
    if (options.rank >= 0 && !any_rank && !recs.empty())
      res.notes.push_back(std::string("--rank ") + std::to_string(options.rank) + " does not apply to the " + side +
                          " side: its records carry no rank");
  };
  filter_note(grecs, "golden");
  filter_note(trecs, "target");
  res.filtered = pairing.filtered_golden + pairing.filtered_target;
  if (pairing.filtered_golden + pairing.filtered_target > 0)
    res.notes.push_back("filters (--step/--rank/--direction/--include/--exclude) left out " +
                        std::to_string(pairing.filtered_golden) + " golden and " +
                        std::to_string(pairing.filtered_target) + " target records");
}

// A row for every pair, and the plan of each row to measure (a note per kind of row not measured).
std::vector<RowPlan> plan_rows(CompareResult& res, const RecordList& grecs, const RecordList& trecs,
                               const Pairing& pairing, const std::vector<NamePattern>& kl_patterns) {
  res.rows.resize(pairing.exact.pairs.size());
  std::vector<RowPlan> plans;
  std::map<std::string, int64_t> note_counts;
  for (size_t k = 0; k < pairing.exact.pairs.size(); ++k) {
    CompareRow& row = res.rows[k];
    row.golden = &grecs[pairing.exact.pairs[k].first];
    row.target = &trecs[pairing.exact.pairs[k].second];
    row.match = pairing.matches[k].kind;
    row.match_confidence = pairing.matches[k].confidence;
    RowPlan plan;
    plan.row = k;
    std::string note;
    const bool measure = plan_row(row, plan, kl_patterns, note);
    if (!note.empty()) ++note_counts[note];
    if (measure) plans.push_back(plan);
  }
  for (const auto& [note, count] : note_counts)
    res.notes.push_back(std::to_string(count) + (count == 1 ? " pair " : " pairs ") + note);
  return plans;
}

// Parameters at a later step: the process that measures the later row also measures the update (its
// bytes count in that row's share).
void add_update_bytes(const CompareResult& res, const std::vector<compare::UpdatePair>& updates,
                      std::vector<RowPlan>& plans) {
  std::vector<size_t> plan_of_row(res.rows.size(), SIZE_MAX);
  for (size_t p = 0; p < plans.size(); ++p) plan_of_row[plans[p].row] = p;
  for (const compare::UpdatePair& u : updates)
    if (plan_of_row[u.after] != SIZE_MAX)
      plans[plan_of_row[u.after]].update_bytes += record_bytes(*res.rows[u.before].golden) +
                                                  record_bytes(*res.rows[u.before].target);
}

// What was measured is the fixed-threshold judgement; the verdict policy decides the final verdict
// (a same-count shape change is never better than warn: compared flat, but worth a look).
void judge_measured(CompareResult& res, const std::vector<bool>& context) {
  for (CompareRow& row : res.rows) {
    row.fixed_verdict = row.verdict;
    row.fixed_reason_at = 0;  // the reason so far is the fixed judgement's
    row.fixed_reason_size = static_cast<uint32_t>(row.reason.size());
  }
  // Parameters at a later step: whether their updates differ beyond what the gradients explain (the
  // noise-model policy fails those that do).
  compare::judge_parameter_updates(res.rows);
  set_context_aside(res, context);
  apply_verdict_policy(res, VerdictPolicy::kFixedThresholds);
}

}  // namespace

Result<CompareResult> run_compare(const RecordSource& golden, const RecordSource& target,
                                  const CompareOptions& options) {
  PARITY_ASSIGN_OR_RETURN(const ComparePatterns patterns, compile_patterns(options));
  CompareResult res;
  describe_sources(res, golden, target, options);
  const RecordList& grecs = golden.records();
  const RecordList& trecs = target.records();
  PARITY_ASSIGN_OR_RETURN(const Pairing pairing, pair_records(grecs, trecs, patterns, options, res.notes));
  note_filters(res, grecs, trecs, pairing.exact, options);
  for (size_t i : pairing.exact.unmatched_golden) res.unmatched_golden.push_back(grecs[i]);
  for (size_t j : pairing.exact.unmatched_target) res.unmatched_target.push_back(trecs[j]);

  release_free_memory();  // the pairing's hash tables, before the rows and their measurement
  std::vector<RowPlan> plans = plan_rows(res, grecs, trecs, pairing, patterns.kl);
  // A backward pass run on a scaled loss: its rows are compared after unscaling the target (every process
  // finds the same scales from the records it lists, before measuring).
  res.loss_scales = compare::detect_loss_scales(res.rows, golden, target);
  if (const int64_t unscaled = compare::mark_loss_scaled_rows(res.rows, res.loss_scales); unscaled > 0)
    res.notes.push_back(loss_scale_note(res.loss_scales, unscaled));
  std::vector<compare::UpdatePair> updates = compare::plan_parameter_updates(res.rows);
  add_update_bytes(res, updates, plans);
  const int jobs = options.jobs > 0 ? options.jobs : omp_get_max_threads();
  if (!is_distributed(options.group)) {
    measure_planned(res, plans, updates, golden, target, jobs, options.progress);
  } else if (options.rank_shares == nullptr) {
    PARITY_RETURN_NOT_OK(measure_byte_share(res, plans, updates, golden, target, jobs, options));
  } else {
    PARITY_RETURN_NOT_OK(measure_rank_share(res, plans, updates, golden, target, jobs, options));
  }
  if (is_distributed(options.group) && !options.group->is_root()) return res;  // process 0 judges the whole
  judge_measured(res, pairing.context);
  return res;
}

}  // namespace parity
