// Pairing what exact names leave unmatched: mapped names, then an order-based sequence alignment.
//
// Alignment (docs/alignment.md): per (rank, step), the unmatched golden and target records in execution
// order are aligned by edit distance (Needleman–Wunsch with linear gaps). Two records may pair only when
// they have the same direction, role and element count; the substitution cost grows when the op/module
// type, the shape or the argument index differ. A gap (a fused-away op, an extra cast) costs 1, more than
// any allowed substitution, so one extra event on either side does not shift everything after it —
// the failure of plain position matching (TroubleShooter aligns by shape-sequence edit distance for the
// same reason; anchors.md).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

#include "matching/index_queues.h"
#include "parity/matching.h"

namespace parity::matching {
namespace {

int64_t numel_of(const Record& r) {
  Result<int64_t> n = shape_numel(r.shape);
  return n.ok() ? *n : -1;
}

constexpr double kGap = 1.0;
// Highest confidence of a pair inside a module whose two implementations differ (below
// kStrongPairingConfidence, so such a pair can warn but never fail a run on its own).
constexpr double kDifferentImplementationConfidence = 0.5;
static_assert(kDifferentImplementationConfidence < kStrongPairingConfidence);
constexpr double kNever = std::numeric_limits<double>::infinity();

double substitution_cost(const Record& g, const Record& t) {
  if (g.direction != t.direction || g.role != t.role) return kNever;
  const int64_t ng = numel_of(g), nt = numel_of(t);
  if (ng < 0 || ng != nt) return kNever;  // compare needs equal element counts
  double c = 0;
  if (g.op != t.op) c += 0.5;       // renamed / re-implemented module: allowed, but prefer same type
  if (g.shape != t.shape) c += 0.25;  // same count, different shape (a fused layout)
  if (g.index != t.index) c += 0.1;
  return c;
}

// Global alignment of two sequences; returns pairs (golden position, target position).
std::vector<std::pair<size_t, size_t>> align_sequences(const std::vector<const Record*>& g,
                                                       const std::vector<const Record*>& t) {
  const size_t n = g.size(), m = t.size();
  // Costs in two rolling rows; only the traceback (one byte per cell) is kept whole.
  std::vector<double> prev(m + 1), cur(m + 1);
  std::vector<uint8_t> move((n + 1) * (m + 1));  // 0 = diagonal, 1 = gap in target (skip g), 2 = skip t
  auto at = [m](size_t i, size_t j) { return i * (m + 1) + j; };
  for (size_t j = 0; j <= m; ++j) prev[j] = kGap * static_cast<double>(j), move[at(0, j)] = 2;
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = kGap * static_cast<double>(i);
    move[at(i, 0)] = 1;
    for (size_t j = 1; j <= m; ++j) {
      double best = prev[j] + kGap;
      uint8_t mv = 1;
      if (cur[j - 1] + kGap < best) best = cur[j - 1] + kGap, mv = 2;
      const double sub = substitution_cost(*g[i - 1], *t[j - 1]);
      if (sub != kNever && prev[j - 1] + sub <= best) best = prev[j - 1] + sub, mv = 0;
      cur[j] = best;
      move[at(i, j)] = mv;
    }
    std::swap(prev, cur);
  }
  std::vector<std::pair<size_t, size_t>> pairs;
  size_t i = n, j = m;
  while (i > 0 || j > 0) {
    const uint8_t mv = (i == 0) ? 2 : (j == 0) ? 1 : move[at(i, j)];
    if (mv == 0) {
      pairs.emplace_back(i - 1, j - 1);
      --i, --j;
    } else if (mv == 1) {
      --i;
    } else {
      --j;
    }
  }
  std::reverse(pairs.begin(), pairs.end());
  return pairs;
}

std::string strip_prefix(const std::string& module, const std::string& prefix) {
  if (prefix.empty()) return module;
  if (module == prefix.substr(0, prefix.size() - 1)) return "<root>";  // the wrapped model itself
  return module.compare(0, prefix.size(), prefix) == 0 ? module.substr(prefix.size()) : module;
}

// The prefix ("module.", "0.", "model.inner.") that, removed from the unmatched module paths of `side`,
// turns most of them (at least half, and at least two) into module paths of `other`; "" when none does.
std::string wrapper_prefix(const RecordList& side, const std::vector<bool>& side_free,
                           const RecordList& other, const std::vector<bool>& other_free) {
  std::set<std::string> other_modules, side_modules;
  for (size_t i = 0; i < other.size(); ++i)
    if (other_free[i] && !other[i].module.empty()) other_modules.insert(other[i].module);
  for (size_t i = 0; i < side.size(); ++i)
    if (side_free[i] && !side[i].module.empty()) side_modules.insert(side[i].module);
  std::map<std::string, int64_t> votes;
  for (const std::string& m : side_modules) {
    for (size_t dot = m.find('.'); dot != std::string::npos; dot = m.find('.', dot + 1)) {
      if (other_modules.count(m.substr(dot + 1))) ++votes[m.substr(0, dot + 1)];
    }
  }
  std::string best;
  int64_t best_votes = 0;
  for (const auto& [prefix, n] : votes)
    if (n > best_votes) best = prefix, best_votes = n;
  return best_votes >= 2 && 2 * best_votes >= static_cast<int64_t>(side_modules.size()) ? best : "";
}

// The pairing as it grows: every pair so far with its kind, the confidence of aligned pairs, and which
// records are still free.
struct GrowingPairing {
  std::vector<std::tuple<size_t, size_t, MatchKind>> all;
  std::map<std::pair<size_t, size_t>, double> confidence;  // aligned pairs only
  std::vector<bool> g_free, t_free;

  GrowingPairing(const ExactPairing& exact, size_t golden_size, size_t target_size)
      : g_free(golden_size, false), t_free(target_size, false) {
    all.reserve(exact.pairs.size());
    for (const auto& [g, t] : exact.pairs) all.emplace_back(g, t, MatchKind::kExact);
    for (size_t g : exact.unmatched_golden) g_free[g] = true;
    for (size_t t : exact.unmatched_target) t_free[t] = true;
  }
  void add(size_t g, size_t t, MatchKind kind) {
    all.emplace_back(g, t, kind);
    g_free[g] = t_free[t] = false;
  }
};

// 1. Mapping rules: an unmatched target record whose mapped name is an unmatched golden record's.
// Unmatched golden records per (rank, step, name) in listing order (matching/index_queues.h: a renamed
// model has a name per record).
void pair_by_map(const RecordList& golden, const RecordList& target, const ExactPairing& exact, const NameMap& map,
                 GrowingPairing& grow, std::vector<std::string>& notes) {
  std::map<std::tuple<int, int64_t, std::string_view>, IndexQueues::Queue> by_name;  // names are interned
  IndexQueues occurrences(golden.size());
  for (size_t g : exact.unmatched_golden)
    occurrences.push(by_name[{golden[g].rank, golden[g].step, golden[g].name.str()}], g);
  int64_t unresolved = 0;
  for (size_t t : exact.unmatched_target) {
    const std::string want = map.apply(target[t].name);
    if (want.empty()) continue;
    auto it = by_name.find({target[t].rank, target[t].step, want});
    if (it == by_name.end() || it->second.empty()) {
      ++unresolved;
      continue;
    }
    grow.add(occurrences.pop(it->second), t, MatchKind::kMapped);
  }
  if (unresolved > 0)
    notes.push_back(std::to_string(unresolved) + " target names mapped by " + map.file +
                    " found no unmatched golden record of that name");
}

using AlignGroups = std::map<std::tuple<int, int64_t, std::string>, std::pair<std::vector<size_t>, std::vector<size_t>>>;

// Free capture events grouped by (rank, step, module path). Records of different modules never pair: a
// module's own input/output rows match by name, and only what it computes inside (its ops) is aligned,
// among themselves. Plain tensor files carry no execution order, only a listing order, and pairing "a.npy"
// with "b.npy" by position would compare unrelated tensors: only capture events are aligned. A wrapper
// (DDP's "module.", nn.Sequential's "0.") prefixes every module path of one side: the same structure under
// another root; such a prefix is stripped before grouping.
AlignGroups group_free_events(const RecordList& golden, const RecordList& target, const GrowingPairing& grow,
                              std::vector<std::string>& notes) {
  auto is_event = [](const Record& r) { return !r.direction.empty() || !r.role.empty(); };
  const std::string g_prefix = wrapper_prefix(golden, grow.g_free, target, grow.t_free);
  const std::string t_prefix = wrapper_prefix(target, grow.t_free, golden, grow.g_free);
  if (!g_prefix.empty()) notes.push_back("golden module paths carry the wrapper prefix '" + g_prefix + "': aligned without it");
  if (!t_prefix.empty()) notes.push_back("target module paths carry the wrapper prefix '" + t_prefix + "': aligned without it");
  AlignGroups groups;
  for (size_t g = 0; g < golden.size(); ++g)
    if (grow.g_free[g] && is_event(golden[g]))
      groups[{golden[g].rank, golden[g].step, strip_prefix(golden[g].module, g_prefix)}].first.push_back(g);
  for (size_t t = 0; t < target.size(); ++t)
    if (grow.t_free[t] && is_event(target[t]))
      groups[{target[t].rank, target[t].step, strip_prefix(target[t].module, t_prefix)}].second.push_back(t);
  return groups;
}

// One group's records aligned by execution order (align_sequences). Confidence: how alike the two records
// are (1 − substitution cost), scaled by how alike the two sequences are in length (one golden op against
// three target ops leaves two possible partners). Two different implementations of one module (their
// record sequences differ op by op): their intermediate values need not correspond even where op and shape
// agree (a matmul of scaled queries against a matmul followed by a division), so no pair inside can be
// strong evidence; the module's own inputs and outputs, matched by name, carry the verdict.
void align_group(const RecordList& golden, const RecordList& target, std::vector<size_t>& gs, std::vector<size_t>& ts,
                 GrowingPairing& grow) {
  auto by_order = [](const RecordList& recs) {
    return [&recs](size_t a, size_t b) { return std::make_pair(recs[a].order, a) < std::make_pair(recs[b].order, b); };
  };
  std::stable_sort(gs.begin(), gs.end(), by_order(golden));
  std::stable_sort(ts.begin(), ts.end(), by_order(target));
  std::vector<const Record*> gp, tp;
  for (size_t g : gs) gp.push_back(&golden[g]);
  for (size_t t : ts) tp.push_back(&target[t]);
  const double length_ratio = static_cast<double>(std::min(gs.size(), ts.size())) /
                              static_cast<double>(std::max(gs.size(), ts.size()));
  const bool same_sequence = gp.size() == tp.size() && std::equal(gp.begin(), gp.end(), tp.begin(),
                                                                   [](const Record* a, const Record* b) {
                                                                     return a->op == b->op && a->role == b->role;
                                                                   });
  const double cap = same_sequence ? 1.0 : kDifferentImplementationConfidence;
  for (const auto& [i, j] : align_sequences(gp, tp)) {
    grow.add(gs[i], ts[j], MatchKind::kAligned);
    grow.confidence[{gs[i], ts[j]}] = std::min(cap, (1.0 - substitution_cost(*gp[i], *tp[j])) * length_ratio);
  }
}

// 2. Order-based alignment per (rank, step, module), within the alignment budget.
void pair_by_order(const RecordList& golden, const RecordList& target, const AlignOptions& options,
                   GrowingPairing& grow, std::vector<std::string>& notes) {
  AlignGroups groups = group_free_events(golden, target, grow, notes);
  for (auto& [key, gt] : groups) {
    auto& [gs, ts] = gt;
    if (gs.empty() || ts.empty()) continue;
    if (static_cast<int64_t>(gs.size()) * static_cast<int64_t>(ts.size()) > options.max_cells) {
      notes.push_back("alignment skipped for rank " + std::to_string(std::get<0>(key)) + " step " +
                      std::to_string(std::get<1>(key)) + " module " + std::get<2>(key) + ": " +
                      std::to_string(gs.size()) + " × " + std::to_string(ts.size()) +
                      " unmatched records exceed the alignment budget");
      continue;
    }
    align_group(golden, target, gs, ts, grow);
  }
}

}  // namespace

std::vector<PairMatch> extend_pairing(const RecordList& golden, const RecordList& target,
                                      ExactPairing& pairing, const NameMap* map, bool align,
                                      const AlignOptions& options, std::vector<std::string>& notes) {
  GrowingPairing grow(pairing, golden.size(), target.size());
  if (map != nullptr && !map->rules.empty()) pair_by_map(golden, target, pairing, *map, grow, notes);
  if (align) pair_by_order(golden, target, options, grow, notes);

  // Golden listing order, as run_compare's rows are.
  std::stable_sort(grow.all.begin(), grow.all.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  pairing.pairs.clear();
  std::vector<PairMatch> kinds;
  for (const auto& [g, t, k] : grow.all) {
    pairing.pairs.emplace_back(g, t);
    kinds.push_back({k, k == MatchKind::kAligned ? grow.confidence[{g, t}] : 1.0});
  }
  std::vector<size_t> ug, ut;
  for (size_t g : pairing.unmatched_golden)
    if (grow.g_free[g]) ug.push_back(g);
  for (size_t t : pairing.unmatched_target)
    if (grow.t_free[t]) ut.push_back(t);
  pairing.unmatched_golden = std::move(ug);
  pairing.unmatched_target = std::move(ut);
  return kinds;
}

}  // namespace parity::matching
