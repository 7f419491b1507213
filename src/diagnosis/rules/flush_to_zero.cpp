// FLUSH_TO_ZERO: the difference sits on tiny magnitudes — values that are nonzero in the golden but
// exactly zero in the target, where the golden value (or the value that fed it) is below fp16's
// smallest normal 2^-14. Seed 004 §1.2: "if the two outputs differ mainly on very small values, the
// flush-to-zero policy for subnormals differs, not the main computation"; §4.1's Normalize case.
#include <algorithm>
#include <cmath>
#include <optional>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

constexpr double kTiny = 6.103515625e-05;  // 2^-14, fp16 smallest normal (anchors, tolerance conventions)
constexpr double kMinShare = 1e-3;         // at least 0.1 % of the elements zeroed ...
constexpr double kMostOfTheError = 0.5;    // ... or fewer, carrying most of the row's squared error
constexpr double kTinyShare = 0.9;         // ≥ 90 % of the zeroed elements were tiny in the golden
constexpr double kFallbackShare = 1e-2;    // without tensor data: ≥ 1 % of the elements flushed

struct Signature {
  int64_t numel = 0, zeroed = 0, tiny = 0;
  double error_share = 0;  // share of Σ(t−g)² carried by the zeroed elements
};

std::optional<std::vector<double>> load(const RecordSource* src, const Record& r) {
  if (src == nullptr || !r.has_data) return std::nullopt;
  Result<TensorView> v = src->load(r);
  if (!v.ok()) return std::nullopt;
  std::vector<double> out(static_cast<size_t>(v->numel));
  decode_to_double(*v, 0, v->numel, out.data());
  return out;
}

// Where does the output error of `out_row` sit? `in_row` (same element count) is the golden value that
// fed each output element, when the event is elementwise along its features (norms, activations).
std::optional<Signature> signature(const DiagnosisContext& ctx, const CompareRow& out_row, const CompareRow* in_row) {
  auto g = load(ctx.golden_source, *out_row.golden);
  auto t = load(ctx.target_source, *out_row.target);
  if (!g || !t || g->size() != t->size()) return std::nullopt;
  std::optional<std::vector<double>> gin;
  if (in_row) {
    gin = load(ctx.golden_source, *in_row->golden);
    if (gin && gin->size() != g->size()) gin.reset();
  }
  Signature s;
  s.numel = static_cast<int64_t>(g->size());
  // A value the target's dtype cannot hold at all (at most half its smallest subnormal: round to nearest
  // gives 0, as fp16 does below 2^-25) is the format's underflow, not a flush: a flush zeroes values the
  // format could have kept as subnormals (Mamba's fp16 run holds such underflows and no flush).
  const FloatFormat* tf = float_format(out_row.target->dtype);
  const double underflow = tf != nullptr ? 0.5 * tf->min_subnormal : 0.0;
  double err_all = 0, err_zeroed = 0;
  for (size_t i = 0; i < g->size(); ++i) {
    const double gv = (*g)[i], tv = (*t)[i];
    if (!std::isfinite(gv) || !std::isfinite(tv)) continue;
    const double e = (tv - gv) * (tv - gv);
    err_all += e;
    if (tv == 0.0 && gv != 0.0 && std::abs(gv) > underflow) {
      ++s.zeroed;
      err_zeroed += e;
      const double feed = gin ? std::abs((*gin)[i]) : std::abs(gv);
      if (feed < kTiny || std::abs(gv) < kTiny) ++s.tiny;
    }
  }
  s.error_share = err_all > 0 ? err_zeroed / err_all : 0;
  return s;
}

// A suspect's candidate rows, each with the golden value that fed it: the event's outputs (the flush inside
// its kernel), then the inputs of the ops it contains (a flush applied to a value before an op inside the
// module: zeros enter that op).
std::vector<std::pair<const CompareRow*, const CompareRow*>> candidate_rows(const DiagnosisContext& ctx,
                                                                           const EventError& e) {
  const CompareRow* in = nullptr;
  for (size_t i : e.rows) {
    const CompareRow& r = ctx.result->rows[i];
    if (r.golden->role == "input" && dtype_is_float(r.golden->dtype) && (!in || r.golden->index < in->golden->index)) in = &r;
  }
  std::vector<std::pair<const CompareRow*, const CompareRow*>> candidates;
  for (size_t i : e.rows) {
    const CompareRow& row = ctx.result->rows[i];
    if (row.golden->role == "output" || row.golden->role == "grad") candidates.emplace_back(&row, in);
  }
  for (const CompareRow& row : ctx.result->rows) {
    const Record& g = *row.golden;
    if (g.role == "input" && g.rank == e.rank && g.step == e.step && g.direction == e.direction &&
        g.order > e.first_order && g.order <= e.last_order && row.noise == NoiseClass::kStructural)
      candidates.emplace_back(&row, &row);
  }
  return candidates;
}

// The finding for a suspect whose tensors show the flush, from the first candidate that does: a share
// of the elements that matters, or a few that are most of what differs (one flushed element of 2,048 in a
// norm's input fails the row on its own: it is the row's error, not a bystander).
std::optional<Diagnosis> flush_in_suspect(const DiagnosisContext& ctx, const Suspect& s) {
  const EventError& e = event_of(ctx, s);
  for (const auto& [row_ptr, fed_by] : candidate_rows(ctx, e)) {
    const CompareRow& row = *row_ptr;
    auto sig = signature(ctx, row, fed_by);
    if (!sig || sig->zeroed == 0 ||
        (sig->zeroed < static_cast<int64_t>(kMinShare * sig->numel) && sig->error_share < kMostOfTheError))
      continue;
    if (static_cast<double>(sig->tiny) < kTinyShare * static_cast<double>(sig->zeroed)) continue;
    Diagnosis d;
    d.strength = 3;
    d.severity = Severity::kWarn;
    d.events = {e.name, row.golden->name};
    d.evidence.push_back(fmt::format(
        "{}: {} of {} elements are 0 in the target but nonzero in the golden; {} of them were below fp16's "
        "smallest normal 2^-14 = 6.1e-05 where they entered {}",
        row.golden->name, sig->zeroed, sig->numel, sig->tiny, e.name));
    d.evidence.push_back(fmt::format("those elements carry {:.1f} % of the squared error; {}",
                                     100 * sig->error_share, row_summary(row)));
    d.evidence.push_back(s.why);
    d.advice =
        "The target flushes subnormal/tiny values to zero before this op. Compute it in fp32 (cast its input "
        "up before the op), or rescale the activations into the normal range; check the target's "
        "denormal/flush-to-zero mode (seed 004 §1.2, §4.1).";
    return d;
  }
  return std::nullopt;
}

// Without tensor data: the kernel's own flush-to-zero count (golden tiny and nonzero, target exactly 0) on
// a row beyond rounding (a softmax tail of 1e-9 rounds to 0 in fp16 without anything being wrong), a share
// that matters (1 %), and no NaN/Inf disagreement (that row belongs to OVERFLOW).
std::optional<Diagnosis> flush_in_metrics(const DiagnosisContext& ctx) {
  for (const CompareRow& row : ctx.result->rows) {
    if (!row.metrics || row.metrics->numel == 0 ||
        (row.noise != NoiseClass::kElevated && row.noise != NoiseClass::kStructural))
      continue;
    const PairMetrics& m = *row.metrics;
    if (m.nonfinite_mismatch > 0 || m.ftz_count < std::max<int64_t>(1, static_cast<int64_t>(kFallbackShare * m.numel)))
      continue;
    // With the tensors at hand, the count excludes what the target's format cannot hold (signature()).
    if (const auto sig = signature(ctx, row, nullptr);
        sig && sig->zeroed < std::max<int64_t>(1, static_cast<int64_t>(kFallbackShare * m.numel)))
      continue;
    Diagnosis d;
    d.strength = 3;
    d.severity = Severity::kWarn;
    d.events = {event_name(*row.golden), row.golden->name};
    d.evidence.push_back(fmt::format("{}: {} of {} elements tiny and nonzero in the golden are exactly 0 in the target",
                                     row.golden->name, m.ftz_count, m.numel));
    d.evidence.push_back(row_summary(row));
    d.advice =
        "The target flushes subnormal values to zero. Compute this op in fp32 or rescale its inputs into the "
        "normal range; check the denormal/flush-to-zero mode (seed 004 §1.2).";
    return d;
  }
  return std::nullopt;
}

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  // NaN/Inf born in the forward pass collapse what follows to zeros too: OVERFLOW's story, not a flush.
  if (target_forward_nonfinite(ctx)) return {};
  // Candidates: the suspects that create error (ranked), then rows the metrics already flag. Forward
  // activations only: gradients are small by nature and their zeros are GRAD_UNDERFLOW's.
  for (const Suspect& s : ctx.analysis->suspects) {
    if (s.kind != SuspectKind::kSource || s.direction == "backward") continue;
    if (std::optional<Diagnosis> d = flush_in_suspect(ctx, s)) return {std::move(*d)};
  }
  if (std::optional<Diagnosis> d = flush_in_metrics(ctx)) return {std::move(*d)};
  return {};
}

}  // namespace

extern const Rule rule_flush_to_zero{"FLUSH_TO_ZERO", "Tiny values are flushed to zero in the target", run};

}  // namespace parity
