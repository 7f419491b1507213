// Loss scaling recognised and undone (parity/loss_scale.h, compare/loss_scale_rows.h; docs/judgement.md
// "Loss scaling"): the detection rule, the recorded scaling ops, and which rows are compared unscaled.
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "compare/loss_scale_rows.h"
#include "parity/loss_scale.h"

namespace parity {

namespace {

constexpr std::string_view kGlobalPrefix = "<global>/";  // ops called outside the model (capture_impl.py)

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool near(double log2_ratio, int k) { return std::fabs(log2_ratio - k) <= kLossScaleTolerance; }

// x = 2^e exactly (finite, positive): e, else nullopt.
std::optional<int> exact_log2(double x) {
  if (!(x > 0) || !std::isfinite(x)) return std::nullopt;
  int e = 0;
  if (std::frexp(x, &e) != 0.5) return std::nullopt;
  return e - 1;
}

bool is_mul(std::string_view op) {
  return op == "mul" || op == "__mul__" || op == "__rmul__" || op == "mul_" || op == "__imul__";
}

// "<global>/mul#0/forward/output/0" → "<global>/mul#0".
std::string event_of(const Record& r) {
  const size_t at = r.name.rfind("/" + std::string(r.direction.view()) + "/");
  return at == std::string::npos ? std::string(r.name.view()) : std::string(r.name.view().substr(0, at));
}

bool one_element(const Record& r) { return shape_numel(r.shape).ValueOr(0) == 1; }

// The number a one-element record holds, from its stored statistics (min = max).
std::optional<double> single_value(const Record& r) {
  if (!one_element(r) || !r.stats || r.stats->min != r.stats->max) return std::nullopt;
  return r.stats->min;
}

// The power-of-two number argument of a recorded `mul` call (`loss * 4096`, `torch.mul(loss, 4096.0)`).
std::optional<double> number_argument(const RecordSource& source, const Record& output) {
  const std::string text = source.op_arguments_json(output);
  if (text.empty()) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("args") || !j["args"].is_array()) return std::nullopt;
  for (const nlohmann::json& a : j["args"])
    if (a.is_number() && exact_log2(a.get<double>())) return a.get<double>();
  return std::nullopt;
}

// The factor of a tensor-by-tensor `mul` (GradScaler's `outputs * self._scale`): the one input whose
// single value is a power of two while the other's is not (two powers of two cannot be told apart).
std::optional<double> tensor_factor(const std::vector<const Record*>& inputs) {
  std::vector<double> powers;
  int others = 0;
  for (const Record* r : inputs) {
    const std::optional<double> v = single_value(*r);
    if (v && exact_log2(*v)) powers.push_back(*v);
    else ++others;
  }
  if (powers.size() == 1 && others == 1) return powers[0];
  return std::nullopt;
}

struct MulEvent {
  const Record* output = nullptr;  // forward output 0
  std::vector<const Record*> inputs;
};

}  // namespace

std::optional<ScaleEvidence> shared_power_of_two(const std::vector<double>& log2_ratios_in_order) {
  const std::vector<double>& r = log2_ratios_in_order;
  if (static_cast<int64_t>(r.size()) < kLossScaleMinRows) return std::nullopt;
  ScaleEvidence e;
  e.rows_measured = static_cast<int64_t>(r.size());
  e.median = median_of(r);
  const double k = std::round(e.median);
  if (k == 0 || std::fabs(k) > kLossScaleMaxLog2 || !near(e.median, static_cast<int>(k))) return std::nullopt;
  e.log2_ratio = static_cast<int>(k);
  for (double x : r) {
    if (!near(x, e.log2_ratio)) continue;
    ++e.rows_at_ratio;
    e.max_deviation = std::max(e.max_deviation, std::fabs(x - k));
  }
  if (static_cast<double>(e.rows_at_ratio) < kLossScaleMajority * static_cast<double>(e.rows_measured))
    return std::nullopt;
  if (!near(r.front(), e.log2_ratio)) return std::nullopt;  // the gradient nearest the loss is not scaled
  return e;
}

std::vector<RecordedLossScaleOp> find_loss_scale_ops(const RecordSource& source) {
  // Forward records of `mul` calls outside the model, by (rank, step, event).
  std::map<std::tuple<int, int64_t, std::string>, MulEvent> muls;
  for (const Record& r : source.records()) {
    if (!r.name.starts_with(kGlobalPrefix) || r.direction != "forward" || !is_mul(r.op)) continue;
    MulEvent& m = muls[{r.rank, r.step, event_of(r)}];
    if (r.role == "output" && r.index == 0) m.output = &r;
    else if (r.role == "input") m.inputs.push_back(&r);
  }
  std::map<std::pair<int, int64_t>, std::pair<int64_t, RecordedLossScaleOp>> first;  // earliest per (rank, step)
  for (const auto& [key, m] : muls) {
    // The product of the loss (one element) and a number is one element.
    if (m.output == nullptr || !one_element(*m.output)) continue;
    std::optional<double> factor = number_argument(source, *m.output);
    if (!factor) factor = tensor_factor(m.inputs);
    if (!factor) continue;
    const auto& [rank, step, event] = key;
    auto [it, fresh] = first.try_emplace({rank, step}, m.output->order, RecordedLossScaleOp{rank, step, {event, *factor}});
    if (!fresh && m.output->order < it->second.first) it->second = {m.output->order, {rank, step, {event, *factor}}};
  }
  std::vector<RecordedLossScaleOp> out;
  for (auto& [key, v] : first) out.push_back(std::move(v.second));
  return out;
}

namespace {

const LossScale* scale_of(const std::vector<LossScale>& scales, int rank, int64_t step) {
  for (const LossScale& s : scales)
    if (s.rank == rank && s.step == step) return &s;
  return nullptr;
}

bool in_event(const Record& r, const std::optional<LossScaleOp>& op) {
  return op && r.name.size() > op->event.size() && r.name.starts_with(op->event) && r.name[op->event.size()] == '/';
}

bool in_scaling_op(const Record& r, const LossScale& s) { return in_event(r, s.golden_op) || in_event(r, s.target_op); }

}  // namespace

namespace {

// torch.amp.GradScaler's bookkeeping outside the model (torch/amp/grad_scaler.py): creating, moving, inverting
// and updating its one-element scale and growth tracker (`full`, `to`, `double`, `reciprocal`, `float`,
// `fill_`), and its fused kernels that unscale the gradients and update the scale (`_amp_*`). A run that uses
// it records these ops; one that does not, none.
bool is_grad_scaler_record(const Record& r) {
  if (!r.name.starts_with(kGlobalPrefix)) return false;
  const std::string_view op = r.op;
  if (op.starts_with("_amp_")) return true;
  static constexpr std::string_view kScaleOps[] = {"full", "to", "double", "reciprocal", "float", "fill_", "copy_"};
  return one_element(r) && std::find(std::begin(kScaleOps), std::end(kScaleOps), op) != std::end(kScaleOps);
}

}  // namespace

bool is_loss_scale_op_record(const Record& r, const std::vector<LossScale>& scales) {
  const LossScale* s = scale_of(scales, r.rank, r.step);
  if (s == nullptr) return false;
  // GradScaler's own ops count where a recorded scaling op shows that a scaler is in use.
  return in_scaling_op(r, *s) || ((s->golden_op || s->target_op) && is_grad_scaler_record(r));
}

namespace compare {

namespace {

std::map<std::pair<int, int64_t>, LossScaleOp> ops_by_stream(const RecordSource& source) {
  std::map<std::pair<int, int64_t>, LossScaleOp> out;
  for (RecordedLossScaleOp& o : find_loss_scale_ops(source)) out[{o.rank, o.step}] = std::move(o.op);
  return out;
}

std::optional<LossScaleOp> op_at(const std::map<std::pair<int, int64_t>, LossScaleOp>& ops, int rank, int64_t step) {
  auto it = ops.find({rank, step});
  if (it == ops.end()) return std::nullopt;
  return it->second;
}

// log2(‖t‖₂ / ‖g‖₂) of a row from the two records' stored statistics, when both norms are finite and
// non-zero.
std::optional<double> norm_log2_ratio(const CompareRow& row) {
  if (!row.golden->stats || !row.target->stats) return std::nullopt;
  const double g = row.golden->stats->l2norm, t = row.target->stats->l2norm;
  if (!(g > 0) || !(t > 0) || !std::isfinite(g) || !std::isfinite(t)) return std::nullopt;
  return std::log2(t / g);
}

}  // namespace

std::vector<LossScale> detect_loss_scales(const RowList& rows, const RecordSource& golden, const RecordSource& target) {
  const auto golden_ops = ops_by_stream(golden), target_ops = ops_by_stream(target);
  // The measured backward rows of each (rank, step), as (execution order, log2 ratio); the scaling op's own
  // rows are left out (the gradient arriving at the scaled loss is 1 on both sides).
  std::map<std::pair<int, int64_t>, std::vector<std::pair<int64_t, double>>> samples;
  for (const CompareRow& row : rows) {
    const Record& g = *row.golden;
    if (g.direction != "backward") continue;
    const std::optional<double> r = norm_log2_ratio(row);
    if (!r) continue;
    LossScale ops;
    ops.golden_op = op_at(golden_ops, g.rank, g.step);
    ops.target_op = op_at(target_ops, g.rank, g.step);
    if (in_scaling_op(g, ops) || in_scaling_op(*row.target, ops)) continue;
    samples[{g.rank, g.step}].emplace_back(g.order, *r);
  }
  std::vector<LossScale> out;
  for (auto& [key, s] : samples) {
    std::stable_sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<double> ratios;
    ratios.reserve(s.size());
    for (const auto& [order, r] : s) ratios.push_back(r);
    std::optional<ScaleEvidence> e = shared_power_of_two(ratios);
    if (!e) continue;
    LossScale ls;
    ls.rank = key.first;
    ls.step = key.second;
    ls.evidence = *e;
    ls.golden_op = op_at(golden_ops, ls.rank, ls.step);
    ls.target_op = op_at(target_ops, ls.rank, ls.step);
    out.push_back(std::move(ls));
  }
  return out;
}

int row_loss_scale_log2(const CompareRow& row, const LossScale& s) {
  const Record& g = *row.golden;
  const int k = s.evidence.log2_ratio;
  if (!in_scaling_op(g, s) && !in_scaling_op(*row.target, s)) return g.direction == "backward" ? k : 0;
  // The scaling op's own rows: its product holds the two sides' factors (compared at their ratio when that
  // is the detected one), the gradient leaving it toward the loss is scaled, the gradient arriving at the
  // product is 1 on both sides, its inputs are the unscaled loss.
  if (g.direction == "forward" && g.role == "output") {
    const double fg = s.golden_op && in_event(g, s.golden_op) ? s.golden_op->factor : 1.0;
    const double ft = s.target_op && in_event(*row.target, s.target_op) ? s.target_op->factor : 1.0;
    const std::optional<int> op_k = exact_log2(ft / fg);
    return op_k && *op_k == k ? k : 0;
  }
  return g.direction == "backward" && g.role == "output" ? k : 0;
}

int64_t mark_loss_scaled_rows(RowList& rows, const std::vector<LossScale>& scales) {
  if (scales.empty()) return 0;
  int64_t marked = 0;
  for (CompareRow& row : rows) {
    if (row.mode != CompareMode::kTensor && row.mode != CompareMode::kStatistics) continue;  // checksums: as stored
    const LossScale* s = scale_of(scales, row.golden->rank, row.golden->step);
    if (s == nullptr) continue;
    row.loss_scale_log2 = static_cast<int8_t>(row_loss_scale_log2(row, *s));
    marked += row.loss_scale_log2 != 0;
  }
  return marked;
}

}  // namespace compare

}  // namespace parity
