// The scale of the sum a recorded gradient is (docs/judgement.md "Sums that cancel").
#include "analysis/sum_scale.h"

#include <cmath>
#include <string_view>
#include <unordered_set>

#include "analysis/event_index.h"
#include "parity/hash_combine.h"

namespace parity::analysis_detail {

namespace {

constexpr int kMaxCarry = 16;  // ops a sum's scale is carried through (a norm's chain is 3)

// An op event ("<module>/<op>#k/<direction>/<role>/<index>"): module events have no producing op to follow.
bool is_op_record(const Record& r) {
  return !r.op.empty() && r.name.str().find("/" + r.op.str() + "#") != std::string::npos;
}

// "<module>/rsqrt#0/backward" → "<module>/rsqrt#0": the call both directions' events belong to.
std::string_view call_name(const Record& r) {
  std::string_view stem = event_stem(r);
  const std::string_view dir = r.direction;
  if (!dir.empty() && stem.size() > dir.size() && stem.ends_with(dir) && stem[stem.size() - dir.size() - 1] == '/')
    stem.remove_suffix(dir.size() + 1);
  return stem;
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Backward of a product: the gradient of one operand is the arriving gradient times the other operand.
bool is_product(std::string_view op) {
  static const std::unordered_set<std::string_view> k = {"mul", "__mul__", "__rmul__", "mul_", "__imul__", "multiply"};
  return k.count(op) > 0;
}
// Backward of a sum or broadcast: the gradient of an operand is the arriving gradient itself.
bool is_additive(std::string_view op) {
  static const std::unordered_set<std::string_view> k = {"add", "__add__", "__radd__", "add_", "__iadd__", "sub",
                                                         "__sub__", "__rsub__", "sub_", "__isub__", "expand",
                                                         "expand_as", "broadcast_to"};
  return k.count(op) > 0;
}
bool is_matmul(std::string_view op) {
  static const std::unordered_set<std::string_view> k = {"matmul", "__matmul__", "bmm", "mm"};
  return k.count(op) > 0;
}
// Ops whose backward sums nothing into an input of their output's size: elementwise maps and shape changes.
bool is_pass_through(const std::string& op) {
  return is_elementwise_op(op) || op == "unsqueeze" || op == "squeeze" || op == "flatten" || op == "unflatten";
}
// Reductions whose backward broadcasts the arriving gradient back (mean: divided by the count): no new sum.
bool is_reduction_expanded_back(std::string_view op) { return op == "mean" || op == "sum"; }

}  // namespace

size_t SumScales::ValueKeyHash::operator()(const ValueKey& k) const noexcept {
  size_t h = hash_combine(std::hash<int>{}(k.rank), std::hash<int64_t>{}(k.step));
  for (double v : {k.l2norm, k.min, k.max, k.mean}) h = hash_combine(h, std::hash<double>{}(v));
  return hash_combine(h, std::hash<int64_t>{}(k.numel));
}

SumScales::SumScales(const std::vector<const Record*>& records, RecordNorm norm) : norm_(std::move(norm)) {
  for (const Record* r : records) {
    if (!is_op_record(*r)) continue;
    by_call_[EventKey{call_name(*r), r->step, r->rank}].push_back(r);
    // A zero tensor's statistics identify nothing: every zero tensor of that size shares them.
    if (r->direction == "forward" && slot_of(*r) == Slot::kInput && r->stats && r->stats->l2norm > 0)
      readers_[{r->rank, r->step, r->stats->l2norm, r->stats->min, r->stats->max, r->stats->mean, r->stats->numel}]
          .push_back(r);
  }
}

const Record* SumScales::find(const Record& like, std::string_view direction, bool input_slot, int index) const {
  const auto it = by_call_.find(EventKey{call_name(like), like.step, like.rank});
  if (it == by_call_.end()) return nullptr;
  for (const Record* r : it->second)
    if (r->direction == direction && (slot_of(*r) == Slot::kInput) == input_slot &&
        (input_slot || slot_of(*r) == Slot::kOutput) && r->index == index)
      return r;
  return nullptr;
}

const Record* SumScales::unique_consumer(const Record& output) const {
  if (!output.stats || !(output.stats->l2norm > 0)) return nullptr;
  const TensorStats& s = *output.stats;
  const auto it = readers_.find({output.rank, output.step, s.l2norm, s.min, s.max, s.mean, s.numel});
  if (it == readers_.end()) return nullptr;
  const Record* found = nullptr;
  for (const Record* r : it->second) {
    if (r->order <= output.order || r->dtype != output.dtype || !(r->shape == output.shape)) continue;
    if (call_name(*r) == call_name(output)) continue;
    if (found) return nullptr;  // read twice: its gradient is the sum of two consumers' contributions
    found = r;
  }
  return found;
}

std::optional<SumScale> SumScales::of(const Record& arriving_gradient) { return compute(arriving_gradient, 0); }

std::optional<SumScale> SumScales::compute(const Record& grad, int depth) {
  if (depth > kMaxCarry || grad.direction != "backward" || slot_of(grad) != Slot::kInput || grad.index != 0 ||
      !is_op_record(grad))
    return std::nullopt;
  if (const auto it = memo_.find(&grad); it != memo_.end()) return it->second;
  std::optional<SumScale> out;
  const Record* produced = find(grad, "forward", false, 0);    // the op's output this gradient arrives at
  const Record* read = produced ? unique_consumer(*produced) : nullptr;  // the op that read it
  const Record* consumer_out = read ? find(*read, "forward", false, 0) : nullptr;
  const Record* consumer_grad = read ? find(*read, "backward", true, 0) : nullptr;  // arriving at the consumer
  const auto g = norm_(grad);
  const auto go = consumer_grad ? norm_(*consumer_grad) : std::nullopt;
  if (consumer_out && consumer_grad && g && go && g->first > 0 && go->first > 0 && std::isfinite(g->first)) {
    const std::string& op = read->op.str();
    const int64_t m = g->second;                      // elements of the sum's result
    const int64_t produced_numel = numel_of(produced->shape);
    const int64_t consumer_numel = numel_of(consumer_out->shape);
    // The consumer's backward sums products of its arriving gradient go and its other operand a into each
    // element of this gradient: n terms each, m·n in all. Without the elements, E[Σ (go·a)²] over those
    // products is m·n·mean(go²)·mean(a²) when the two are uncorrelated — ‖terms‖ ≈ ‖go‖·‖a‖·sqrt(m·n /
    // (numel(go)·numel(a))) — and rounding errs by expected(u, n)·‖terms‖ (docs/judgement.md).
    int64_t n = 0;
    const Record* other = nullptr;
    bool additive = false;
    if ((is_product(op) || is_additive(op)) && consumer_numel > produced_numel && produced_numel > 0) {
      n = consumer_numel / produced_numel;  // a broadcast operand: summed over the broadcast dimensions
      additive = is_additive(op);
      if (!additive) other = find(*read, "forward", true, read->index == 0 ? 1 : 0);
    } else if (is_matmul(op) && read->index <= 1) {
      const Record* a = find(*read, "forward", true, 0);
      other = find(*read, "forward", true, read->index == 0 ? 1 : 0);
      if (a && !a->shape.empty() && m > 0) n = consumer_numel * a->shape.back() / m;  // numel(Y)·K / m
    } else if ((is_pass_through(op) && consumer_numel == produced_numel) ||
               (is_reduction_expanded_back(op) && consumer_numel < produced_numel)) {
      out = compute(*consumer_grad, depth + 1);  // its relative error and scale are carried unchanged
    }
    if (n > 0) {
      double terms = NAN;
      if (additive) {
        terms = go->first * std::sqrt(static_cast<double>(m) * n / static_cast<double>(go->second));
      } else if (other) {
        const auto a = norm_(*other);
        if (a && a->second > 0)
          terms = go->first * a->first *
                  std::sqrt(static_cast<double>(m) * n / (static_cast<double>(go->second) * a->second));
      }
      if (std::isfinite(terms) && terms > g->first) out = SumScale{terms / g->first, n};
    }
  }
  memo_.emplace(&grad, out);
  return out;
}

}  // namespace parity::analysis_detail
