// How the TP shards of one record combine (parity/layout.h `shard_plan`; docs/layout.md "How shards
// combine"). One table, Megatron-LM's semantics for module-level records:
//
//   split     forward input   forward output       backward input     backward output   weight (param,    bias
//                                                  (grad of output)   (grad of input)   grad, optimizer)
//   column    replicated      concat last          concat last        replicated        concat 0          concat 0
//   row       concat last     replicated (sum*)    replicated         concat last       concat 1          replicated
//   vocab     replicated      replicated (sum*)    replicated         replicated        concat 0          —
//   sequence  concat dim      concat dim           concat dim         concat dim        replicated (grad: sum)
//   none      replicated everywhere
//
// (*) a rule with "partial": outputs recorded before their all-reduce, each rank's a partial sum.
//
// What the capture recorded of a parameter (ParamSplit) places its parameter-like records without a rule:
// partition_dim d: concat d (Megatron's tensor_model_parallel parameters, a DTensor's Shard(d)); a
// sequence_parallel parameter: replicated, its gradient a sum. A rule that says otherwise is a conflict.
// A column-parallel linear's input gradient is whole on each rank: Megatron's ColumnParallelLinear
// copies its input to the TP region inside the module, and that copy all-reduces the gradient in the
// backward. Sequence-parallel norm weights' gradients are partial until the all-reduce of
// finalize_model_grads.
#include <fmt/format.h>

#include <string_view>

#include "parity/layout.h"
#include "parity/record_site.h"

namespace parity::layout {
namespace {

bool is_parameter_like(const Record& r) {
  const std::string_view role = r.role, dir = r.direction;
  return role == "parameter" || role == "grad" || dir == "optimizer";
}

// The parameter a parameter-like record is of: the last name component without a "#k" call index
// ("m.wq/backward/grad/weight#1" -> weight).
std::string_view parameter_of(const Record& r) {
  std::string_view name = r.name;
  name = name.substr(name.rfind('/') == std::string_view::npos ? 0 : name.rfind('/') + 1);
  return name.substr(0, name.find('#'));
}

ShardPlan concat(int dim) { return {Combine::kConcat, dim}; }
constexpr ShardPlan kReplicated{Combine::kReplicated, 0};
constexpr ShardPlan kSum{Combine::kSum, 0};

bool says_something(const ParamSplit& p) { return p.partition_dim >= 0 || p.sequence_parallel; }

ShardPlan recorded_plan(const Record& r, const ParamSplit& p) {
  if (p.partition_dim >= 0) return p.partition_stride == 1 ? concat(p.partition_dim) : ShardPlan{Combine::kUnsupported, 0};
  return std::string_view(r.role) == "grad" ? kSum : kReplicated;  // sequence_parallel
}

ShardPlan parameter_plan(const Record& r, const SplitRule& rule) {
  const bool weight = parameter_of(r) == "weight";
  switch (rule.split) {
    case Split::kColumn: return concat(0);
    case Split::kRow: return weight ? concat(1) : kReplicated;
    case Split::kVocab: return weight ? concat(0) : kReplicated;
    case Split::kSequence: return std::string_view(r.role) == "grad" ? kSum : kReplicated;
    case Split::kNone: return kReplicated;
  }
  return kReplicated;
}

ShardPlan activation_plan(const Record& r, const SplitRule& rule) {
  const bool forward = std::string_view(r.direction) == "forward";
  // Forward input and backward output are the module's input side; forward output and backward input its
  // output side.
  const bool input_side = (std::string_view(r.role) == "input") == forward;
  const int last = -1;
  switch (rule.split) {
    case Split::kColumn:
      return input_side ? kReplicated : concat(last);
    case Split::kRow:
      if (input_side) return concat(last);
      return forward && rule.partial ? kSum : kReplicated;
    case Split::kVocab:
      return !input_side && forward && rule.partial ? kSum : kReplicated;
    case Split::kSequence: return concat(rule.dim);
    case Split::kNone: return kReplicated;
  }
  return kReplicated;
}

}  // namespace

ShardPlan shard_plan(const Record& r, const SplitRule* rule, const ParamSplit* recorded) {
  ShardPlan plan;
  if (recorded != nullptr && says_something(*recorded) && is_parameter_like(r)) {
    plan = recorded_plan(r, *recorded);
  } else {
    if (rule == nullptr || rule->split == Split::kNone) return kReplicated;
    // An op recorded inside a split module (op or mix level) reads and writes shards the module's own rule
    // does not describe (F.linear's weight input, a matmul's partial output before the all-reduce).
    if (!event_site(r).op.empty()) return {Combine::kUnsupported, 0};
    plan = is_parameter_like(r) ? parameter_plan(r, *rule) : activation_plan(r, *rule);
  }
  // A negative dimension counts from the back of the record's own shape.
  if (plan.combine == Combine::kConcat && plan.dim < 0) plan.dim += static_cast<int>(r.shape.size());
  if (plan.combine == Combine::kConcat && (plan.dim < 0 || plan.dim >= static_cast<int>(r.shape.size())))
    return r.shape.size() == 0 ? kReplicated : ShardPlan{Combine::kUnsupported, 0};
  return plan;
}

namespace {
std::string plan_text(const ShardPlan& p) {
  switch (p.combine) {
    case Combine::kConcat: return fmt::format("concatenated along dimension {}", p.dim);
    case Combine::kSum: return "summed";
    case Combine::kUnsupported: return "not mergeable";
    case Combine::kReplicated: break;
  }
  return "replicated";
}
}  // namespace

std::string plan_conflict(const Record& r, const SplitRule* rule, const ParamSplit& recorded, const std::string& file) {
  if (rule == nullptr || !says_something(recorded) || !is_parameter_like(r)) return "";
  const ShardPlan by_rule = shard_plan(r, rule), by_capture = shard_plan(r, nullptr, &recorded);
  if (by_rule.combine == by_capture.combine && by_rule.dim == by_capture.dim) return "";
  return fmt::format("{}: splits[{}] ({}) makes its TP shards {}, but the capture recorded partition_dim {}{} for {} "
                     "(they would be {})", file, rule->line, split_name(rule->split), plan_text(by_rule),
                     recorded.partition_dim, recorded.sequence_parallel ? ", sequence_parallel" : "", parameter_path(r),
                     plan_text(by_capture));
}

std::string unsupported_reason(const Record& r, const SplitRule* rule, const ParamSplit* recorded) {
  if (recorded != nullptr && says_something(*recorded) && is_parameter_like(r)) {
    if (recorded->partition_stride != 1)
      return fmt::format("the capture recorded {} with partition_stride {}: strided TP shards are not merged yet",
                         parameter_path(r), recorded->partition_stride);
    return fmt::format("the capture recorded partition_dim {} for {}, which has {} dimensions", recorded->partition_dim,
                       parameter_path(r), r.shape.size());
  }
  if (!event_site(r).op.empty() && rule != nullptr)
    return fmt::format("{} is recorded inside a {}-parallel module; the layout merges only module-level records", r.op.view(),
                       split_name(rule->split));
  return fmt::format("the layout's split does not fit its {} dimensions", r.shape.size());
}

std::string parameter_path(const Record& r) {
  const std::string_view module = r.module;
  if (!is_parameter_like(r) || module == "<global>") return "";
  const std::string param(parameter_of(r));
  return module.empty() || module == "<root>" ? param : std::string(module) + "." + param;
}

}  // namespace parity::layout
