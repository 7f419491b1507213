// Records on several PP stages and the stage boundaries (sources/layout_stages.h, docs/layout.md).
#include "sources/layout_stages.h"

#include "parity/record_site.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string_view>
#include <tuple>

namespace parity::layout {
namespace {

enum class Flow { kIn, kOut, kParameter };

// Forward inputs and the gradients of inputs (backward outputs) enter a module; forward outputs and the
// gradients of outputs (backward inputs) leave it.
Flow flow_of(const Record& r) {
  const std::string_view role = r.role, dir = r.direction;
  if (role != "input" && role != "output") return Flow::kParameter;
  return (role == "input") == (dir == "forward") ? Flow::kIn : Flow::kOut;
}

using Key = std::tuple<std::string, int, int64_t, int, int>;  // (event, index, step, pp, flow)
// A boundary's two records are one event ("<root>#1/forward": the call and direction) and one index.
Key key_of(const Record& r, int pp, Flow flow) { return {std::string(event_stem(r)), r.index, r.step, pp, static_cast<int>(flow)}; }

bool same_values(const RecordSource& inner, const Record& a, const Record& b, std::string& why) {
  if (a.dtype != b.dtype || !(a.shape == b.shape)) {
    why = fmt::format("{} {} against {} {}", dtype_name(a.dtype), fmt::join(a.shape.vec(), "x"), dtype_name(b.dtype), fmt::join(b.shape.vec(), "x"));
    return false;
  }
  if (!a.has_data || !b.has_data) {
    const bool same = a.stats && b.stats && a.stats->l2norm == b.stats->l2norm && a.stats->min == b.stats->min &&
                      a.stats->max == b.stats->max && a.stats->nan_count == b.stats->nan_count;
    if (!same) why = "their statistics differ";
    return same;
  }
  Result<TensorView> x = inner.load(a), y = inner.load(b);
  if (!x.ok() || !y.ok()) {
    why = (!x.ok() ? x.status() : y.status()).message();
    return false;
  }
  std::vector<double> u(static_cast<size_t>(x->numel)), v(u.size());
  decode_to_double(*x, 0, x->numel, u.data());
  decode_to_double(*y, 0, y->numel, v.data());
  if (std::memcmp(u.data(), v.data(), u.size() * sizeof(double)) == 0) return true;
  why = "the values differ";
  return false;
}

}  // namespace

std::vector<StageCopy> stage_representatives(const RecordList& records, const std::vector<StageCopy>& copies, int first,
                                             int last, std::vector<StageCopy>& boundary) {
  const int keep = flow_of(records[copies[0].record]) == Flow::kOut ? last : first;
  std::vector<StageCopy> kept;
  for (const StageCopy& c : copies) (c.pp == keep ? kept : boundary).push_back(c);
  return kept;
}

void check_stage_boundaries(const RecordSource& inner, const std::vector<StageCopy>& boundary,
                            const std::vector<StageCopy>& all, const std::string& layout_file,
                            std::vector<Status>& problems) {
  const RecordList& in = inner.records();
  std::map<Key, size_t> by_key;  // every record on any stage
  for (const StageCopy& c : all) by_key.emplace(key_of(in[c.record], c.pp, flow_of(in[c.record])), c.record);
  for (const StageCopy& c : boundary) {
    const Record& r = in[c.record];
    const Flow flow = flow_of(r);
    // Forward: stage s received (in) what s−1 sent (out). Backward: s−1 received (out: its output's
    // gradient) what s sent (in: its input's gradient). A parameter's copy: the first stage's.
    // Both directions alike: what enters stage s (a forward input, the gradient of an input sent back
    // by stage s+1... read from stage s's side: its input) is what leaves stage s−1 (its output), so a
    // copy that enters is checked against the previous stage's copy that leaves; one that leaves only
    // needs its partner on the next stage (which checks the values).
    std::string why = "no record of the neighbouring stage to check it against";
    if (flow == Flow::kParameter) {
      for (const StageCopy& k : all)
        if (k.record != c.record && k.pp < c.pp && in[k.record].name == r.name && in[k.record].step == r.step &&
            same_values(inner, in[k.record], r, why))
          why.clear();
    } else {
      const auto it = by_key.find(flow == Flow::kIn ? key_of(r, c.pp - 1, Flow::kOut) : key_of(r, c.pp + 1, Flow::kIn));
      if (it != by_key.end() && (flow == Flow::kOut || same_values(inner, in[it->second], r, why))) why.clear();
    }
    if (!why.empty())
      problems.push_back(Status::Invalid(fmt::format("{}: PP stage boundary: {} on stage {} (rank {}) is not what its neighbouring stage "
                                                     "holds: {}", layout_file, r.name.view(), c.pp, r.rank, why)));
  }
}

}  // namespace parity::layout
