// Ops present in one run only, ranked with the suspects when their module call creates error after them
// (src/analysis/one_sided_ops.h).
#include "analysis/one_sided_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "analysis/event_index.h"
#include "fmt/format.h"

namespace parity::analysis_detail {

namespace {

// An op event ("<module>/<op>#k/<direction>/<role>/<index>") recorded inside a module.
bool is_op_record(const Record& r) {
  return !r.module.empty() && !r.op.empty() && r.name.find("/" + r.op + "#") != std::string::npos;
}

// Is `module` the module `call` or one of its submodules?
bool inside(std::string_view module, std::string_view call) {
  return module == call || (module.size() > call.size() && module.starts_with(call) && module[call.size()] == '.');
}

struct OneSidedOp {
  const Record* record = nullptr;  // its earliest record
  bool golden = true;              // the run that has it
};

// The forward op events of both sides' unmatched records, one entry per event (its earliest record).
std::vector<OneSidedOp> one_sided_ops(const CompareResult& result) {
  std::map<std::tuple<bool, int, int64_t, std::string_view>, OneSidedOp> by_event;
  for (const bool golden : {true, false})
    for (const Record& r : golden ? result.unmatched_golden : result.unmatched_target) {
      if (!is_op_record(r) || direction_rank(r.direction) != 0 || !op_changes_values(r.op)) continue;
      auto [it, inserted] = by_event.try_emplace({golden, r.rank, r.step, event_stem(r)}, OneSidedOp{&r, golden});
      if (!inserted && r.order < it->second.record->order) it->second.record = &r;
    }
  std::vector<OneSidedOp> out;
  for (const auto& [key, op] : by_event) out.push_back(op);
  return out;
}

}  // namespace

bool op_changes_values(const std::string& op) {
  static const std::set<std::string> moves_or_casts = {
      "to", "type", "type_as", "float", "half", "bfloat16", "double", "_to_copy", "contiguous", "clone",
      "detach", "copy_", "view", "view_as", "reshape", "reshape_as", "expand", "expand_as", "flatten",
      "unflatten", "squeeze", "unsqueeze", "transpose", "permute", "t", "chunk", "split", "unbind",
      "narrow", "select", "__getitem__", "size", "dim", "numel", "requires_grad_", "cpu", "cuda"};
  return moves_or_casts.count(op) == 0;
}

void add_one_sided_op_suspects(const CompareResult& result, Analysis& a, std::vector<Suspect>& suspects) {
  const auto stream_key = [](const EventError& e) { return std::make_tuple(e.rank, e.step, direction_rank(e.direction)); };
  // The forward sources of each (rank, step): few, where the events are many (a benign run has none, and
  // its one-sided ops — another attention kernel, an extra cast — then cost one lookup each).
  std::map<std::pair<int, int64_t>, std::vector<const EventError*>> sources;
  for (const EventError& e : a.events)
    if (e.role == EventRole::kSource && direction_rank(e.direction) == 0) sources[{e.rank, e.step}].push_back(&e);
  const auto after_in_call = [](const EventError& e, const Record& r) {
    return inside(e.module.str(), r.module.str()) && e.last_order > r.order && !std::isnan(e.output_ratio);
  };
  std::vector<EventError> added;
  for (const OneSidedOp& op : one_sided_ops(result)) {
    const Record& r = *op.record;
    const auto stream = sources.find({r.rank, r.step});
    if (stream == sources.end() ||
        std::none_of(stream->second.begin(), stream->second.end(), [&](const EventError* e) { return after_in_call(*e, r); }))
      continue;  // its call creates no error after it: the op changed nothing measurable
    // The worst output of its call after it, among the events of its (rank, step) forward stream (a.events
    // is sorted by rank, step, direction, order).
    const auto key = std::make_tuple(r.rank, r.step, 0);
    const auto lo = std::lower_bound(a.events.begin(), a.events.end(), key,
                                     [&](const EventError& e, const auto& k) { return stream_key(e) < k; });
    const EventError* worst = nullptr;
    for (auto it = lo; it != a.events.end() && stream_key(*it) == key; ++it)
      if (after_in_call(*it, r) && (!worst || it->output_ratio > worst->output_ratio)) worst = &*it;
    EventError ev = analysis_detail::event_error_of(r);
    Suspect s;
    s.kind = SuspectKind::kStructure;
    s.event = a.events.size() + added.size();
    s.name = ev.name.str();
    s.module = r.module.str();
    s.op = r.op.str();
    s.direction = r.direction.str();
    s.step = r.step;
    s.rank = r.rank;
    s.output_ratio = worst->output_ratio;
    s.score = std::isinf(worst->output_ratio) ? std::numeric_limits<double>::infinity()
                                               : std::log2(std::max(1.0, worst->output_ratio));
    s.why = fmt::format("op only in the {} run; the {} call creates error after it (worst {} at {})",
                        op.golden ? "golden" : "target", r.module.str(), noise_ratio_text(worst->output_ratio),
                        worst->name.str());
    suspects.push_back(std::move(s));
    added.push_back(std::move(ev));
  }
  for (EventError& e : added) a.events.push_back(std::move(e));
}

}  // namespace parity::analysis_detail
