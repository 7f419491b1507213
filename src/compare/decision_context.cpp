// Decision blocks and the rows a name filter hides that the shown rows' verdicts depend on (parity/compare.h).
// Why: a row inside a block a flipped decision steers is judged given the flip, and the rows after it
// carry what the block differs by (classify_rows, docs/judgement.md "Decision flips"); `--include
// /backward/` hides the forward top-k that explains the expert gradients it shows. Measuring those rows as
// context keeps "a filter only removes rows" (issue 28 §6) without measuring everything a filter hides.
#include <map>
#include <set>
#include <tuple>

#include "parity/compare.h"

namespace parity {

std::string steered_block(const Record& decision) {
  const std::string& module = decision.module.str();
  const size_t dot = module.rfind('.');
  return dot == std::string::npos ? module : module.substr(0, dot);
}

bool in_module(std::string_view module, std::string_view block) {
  return module == block ||
         (module.size() > block.size() && module.substr(0, block.size()) == block && module[block.size()] == '.');
}

namespace {

using EventKey = std::tuple<int, int64_t, std::string>;  // rank, step, "<module or op call>"

// "m/topk#0/forward/output/1" → (rank, step, "m/topk#0"); empty stem for a record outside the forward pass.
EventKey forward_event(const Record& r) {
  const std::string& name = r.name.str();
  const size_t at = r.direction == "forward" ? name.find("/forward/") : std::string::npos;
  return {r.rank, r.step, at == std::string::npos ? std::string() : name.substr(0, at)};
}

}  // namespace

std::vector<bool> decision_context(const std::vector<const Record*>& golden, const std::vector<bool>& hidden) {
  std::vector<bool> context(golden.size(), false);
  // Forward events with a float input, then their integer or boolean outputs: the decisions.
  std::set<EventKey> float_input_events;
  std::set<int64_t> steps;
  for (const Record* r : golden) {
    const Record& g = *r;
    steps.insert(g.step);
    if (g.role == "input" && dtype_is_float(g.dtype)) float_input_events.insert(forward_event(g));
  }
  std::map<std::pair<int, int64_t>, std::set<std::string>> blocks;  // (rank, step) → blocks steered
  for (const Record* r : golden) {
    const Record& g = *r;
    if (g.role != "output" || dtype_is_float(g.dtype) || g.module.empty()) continue;
    const EventKey e = forward_event(g);
    if (!std::get<2>(e).empty() && float_input_events.count(e)) blocks[{g.rank, g.step}].insert(steered_block(g));
  }
  const bool several_steps = steps.size() > 1;
  for (size_t i = 0; i < golden.size(); ++i) {
    if (!hidden[i]) continue;
    const Record& g = *golden[i];
    if (several_steps && g.role == "parameter") {
      context[i] = true;
      continue;
    }
    const auto it = blocks.find({g.rank, g.step});
    if (it == blocks.end()) continue;
    for (const std::string& block : it->second)
      if (in_module(g.module.str(), block)) {
        context[i] = true;
        break;
      }
  }
  return context;
}

}  // namespace parity
