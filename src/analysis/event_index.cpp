// Grouping helpers shared by the analysis passes.
#include "analysis/event_index.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <string_view>
#include <tuple>
#include <unordered_set>

namespace parity::analysis_detail {

Slot slot_of(const Record& r) {
  const std::string& role = r.role;
  if (role == "input" || role == "inputs" || role == "kwarg" || role == "grad_output") return Slot::kInput;
  if (role == "parameter" || role == "parameters" || role == "param" || role == "buffer")
    return Slot::kParameter;
  if (role == "output" || role == "outputs" || role == "grad" || role == "grad_input") return Slot::kOutput;
  return Slot::kOther;
}

int direction_rank(const std::string& direction) {
  return direction == "backward" ? 1 : direction == "optimizer" ? 2 : 0;
}

bool has_capture_metadata(const CompareResult& result) {
  for (const CompareRow& row : result.rows)
    if (!row.golden->role.empty() || !row.golden->direction.empty()) return true;
  return false;
}

bool is_elementwise_op(const std::string& op) {
  // Ops whose every output element depends on O(1) input elements: one rounding per element. Anything
  // else (matmul, norms, softmax, reductions, attention, whole modules) is treated as a reduction over
  // the last dimension of its first floating input.
  static const std::unordered_set<std::string_view> kElementwise = {  // looked up for every row
      "add", "sub", "mul", "div", "neg", "abs", "relu", "gelu", "silu", "sigmoid", "tanh", "pow",
      "square", "to", "type", "float", "half", "bfloat16", "clone", "contiguous", "view", "reshape",
      "transpose", "permute", "t", "expand", "cat", "stack", "split", "chunk", "embedding", "dropout",
      "identity", "getitem", "__getitem__", "masked_fill", "where", "clamp", "exp", "log", "rsqrt",
      "sqrt", "reciprocal", "cos", "sin", "Embedding", "Dropout", "Identity", "ReLU", "GELU", "SiLU",
      "Tanh", "Sigmoid", "NewGELUActivation"};
  if (kElementwise.count(op)) return true;
  std::string l(op);
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  return l == "embedding" || l == "dropout" || l.rfind("__i", 0) == 0 || l.rfind("__r", 0) == 0;
}

EventError event_error_of(const Record& r) {
  EventError e;
  e.name = event_stem(r);
  e.module = r.module;
  e.op = r.op;
  e.direction = r.direction;
  e.step = r.step;
  e.rank = r.rank;
  e.first_order = e.last_order = r.order;
  return e;
}

}  // namespace parity::analysis_detail
