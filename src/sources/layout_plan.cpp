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
// A column-parallel linear's input gradient is whole on each rank: Megatron's ColumnParallelLinear
// copies its input to the TP region inside the module, and that copy all-reduces the gradient in the
// backward. Sequence-parallel norm weights' gradients are partial until the all-reduce of
// finalize_model_grads.
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

ShardPlan shard_plan(const Record& r, const SplitRule* rule) {
  if (rule == nullptr || rule->split == Split::kNone) return kReplicated;
  // An op recorded inside a split module (op or mix level) reads and writes shards the module's own rule
  // does not describe (F.linear's weight input, a matmul's partial output before the all-reduce).
  if (!event_site(r).op.empty()) return {Combine::kUnsupported, 0};
  ShardPlan plan = is_parameter_like(r) ? parameter_plan(r, *rule) : activation_plan(r, *rule);
  // A negative dimension counts from the back of the record's own shape.
  if (plan.combine == Combine::kConcat && plan.dim < 0) plan.dim += static_cast<int>(r.shape.size());
  if (plan.combine == Combine::kConcat && (plan.dim < 0 || plan.dim >= static_cast<int>(r.shape.size())))
    return r.shape.size() == 0 ? kReplicated : ShardPlan{Combine::kUnsupported, 0};
  return plan;
}

}  // namespace parity::layout
