#include "parity/matching.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "matching/index_queues.h"
#include "parity/hash_combine.h"

namespace parity::matching {

bool RecordFilter::keeps(const Record& r) const {
  // A record without a step (plain tensor files, step -1) is not excluded by --step: the filter
  // selects among steps, it does not demand that a source have them (compare adds a note instead).
  if (step >= 0 && r.step >= 0 && r.step != step) return false;
  if (rank >= 0 && r.rank >= 0 && r.rank != rank) return false;
  if (!direction.empty() && !r.direction.empty() && r.direction != direction) return false;
  if (!include.empty() && std::none_of(include.begin(), include.end(),
                                       [&](const NamePattern& p) { return p.search(r.name); }))
    return false;
  for (const NamePattern& p : exclude)
    if (p.search(r.name)) return false;
  return true;
}

namespace {

// Names are interned (parity/interned_string.h): equal names are one address, so a key compares and
// hashes the address, not the text.
struct Key {
  int rank;
  int64_t step;
  const std::string* name;
  bool operator==(const Key& o) const { return rank == o.rank && step == o.step && name == o.name; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    const size_t h = hash_combine(std::hash<const void*>{}(k.name), std::hash<int64_t>{}(k.step));
    return hash_combine(h, std::hash<int>{}(k.rank));
  }
};

}  // namespace

ExactPairing pair_exact(const RecordList& golden, const RecordList& target,
                        const RecordFilter& filter) {
  ExactPairing out;
  // Target occurrences per key in listing order (matching/index_queues.h); each golden record takes the
  // first one left.
  std::unordered_map<Key, IndexQueues::Queue, KeyHash> by_key;
  by_key.reserve(target.size());
  IndexQueues occurrences(target.size());
  std::vector<bool> target_used(target.size(), false);
  for (size_t i = 0; i < target.size(); ++i) {
    const Record& r = target[i];
    if (!filter.keeps(r)) {
      ++out.filtered_target;
      target_used[i] = true;  // neither paired nor reported unmatched: it was filtered out
      continue;
    }
    occurrences.push(by_key[Key{r.rank, r.step, &r.name.str()}], i);
  }
  out.pairs.reserve(golden.size());
  for (size_t i = 0; i < golden.size(); ++i) {
    const Record& r = golden[i];
    if (!filter.keeps(r)) {
      ++out.filtered_golden;
      continue;
    }
    auto it = by_key.find(Key{r.rank, r.step, &r.name.str()});
    if (it == by_key.end() || it->second.empty()) {
      out.unmatched_golden.push_back(i);
      continue;
    }
    const size_t j = occurrences.pop(it->second);
    target_used[j] = true;
    out.pairs.emplace_back(i, j);
  }
  for (size_t j = 0; j < target.size(); ++j) {
    if (!target_used[j]) out.unmatched_target.push_back(j);
  }
  if (out.pairs.empty() && out.unmatched_golden.size() == 1 && out.unmatched_target.size() == 1 &&
      golden.size() - static_cast<size_t>(out.filtered_golden) == 1 &&
      target.size() - static_cast<size_t>(out.filtered_target) == 1) {
    out.pairs.emplace_back(out.unmatched_golden[0], out.unmatched_target[0]);
    out.unmatched_golden.clear();
    out.unmatched_target.clear();
    out.single_by_position = true;
  }
  return out;
}

namespace {

// "<parent>/<op>#k/..." → "<parent>" for an op event, "" for anything else.
std::string op_parent(const Record& r) {
  if (r.op.empty() || r.module.empty()) return "";
  const size_t at = r.name.find("/" + r.op + "#");
  return at == std::string::npos ? "" : r.name.substr(0, at);
}

using CallKey = std::tuple<int, int64_t, std::string>;  // rank, step, parent call

// The op sequence of every parent call: op names in execution order, one per event.
std::map<CallKey, std::vector<std::string>> op_sequences(const RecordList& recs) {
  std::map<CallKey, std::map<std::string, std::pair<int64_t, std::string>>> events;  // stem → (order, op)
  for (const Record& r : recs) {
    const std::string parent = op_parent(r);
    if (parent.empty()) continue;
    const size_t stem_end = r.name.find('/', parent.size() + 1);
    const std::string stem = r.name.substr(0, stem_end);
    auto [it, inserted] = events[{r.rank, r.step, parent}].try_emplace(stem, r.order, r.op);
    if (!inserted) it->second.first = std::min(it->second.first, r.order);
  }
  std::map<CallKey, std::vector<std::string>> out;
  for (auto& [key, stems] : events) {
    std::vector<std::pair<int64_t, std::string>> v;
    for (auto& [stem, ord_op] : stems) v.push_back(ord_op);
    std::sort(v.begin(), v.end());
    for (auto& [ord, op] : v) out[key].push_back(op);
  }
  return out;
}

}  // namespace

namespace {

// How many times each op runs in a call.
std::map<std::string, int> op_counts(const std::vector<std::string>& sequence) {
  std::map<std::string, int> counts;
  for (const std::string& op : sequence) ++counts[op];
  return counts;
}

}  // namespace

int64_t release_diverging_op_sequences(const RecordList& golden, const RecordList& target,
                                       ExactPairing& pairing) {
  const auto gseq = op_sequences(golden);
  const auto tseq = op_sequences(target);
  // Per diverging call, the ops whose names no longer say which call they are: an op is counted per op
  // within its call ("softmax#0" is the call's first softmax), so where both runs call an op equally
  // often the k-th call is the k-th call on both sides, whatever other op one of them adds or lacks (an
  // attention without its 1/√d keeps "softmax#0" — issue 28 §6). Where the counts differ (a linear
  // chunked in two), "linear#0" is a different call on each side and goes to the alignment.
  std::map<CallKey, std::set<std::string>> ambiguous;
  for (const auto& [key, seq] : gseq) {
    auto it = tseq.find(key);
    if (it == tseq.end() || it->second == seq) continue;
    const std::map<std::string, int> gc = op_counts(seq), tc = op_counts(it->second);
    std::set<std::string>& ops = ambiguous[key];
    for (const auto& [op, n] : gc)
      if (auto t = tc.find(op); t != tc.end() && t->second != n) ops.insert(op);
  }
  if (ambiguous.empty()) return 0;
  // In a diverging call an equally counted op keeps its pair only while the two records agree in shape: a
  // k-th call of another shape is another computation whatever its name.
  std::vector<std::pair<size_t, size_t>> kept;
  std::set<CallKey> released;
  for (const auto& [g, t] : pairing.pairs) {
    const Record& r = golden[g];
    const std::string parent = op_parent(r);
    const auto call = parent.empty() ? ambiguous.end() : ambiguous.find({r.rank, r.step, parent});
    if (call != ambiguous.end() && (call->second.count(r.op.str()) || r.shape != target[t].shape)) {
      pairing.unmatched_golden.push_back(g);
      pairing.unmatched_target.push_back(t);
      released.insert(call->first);
    } else {
      kept.emplace_back(g, t);
    }
  }
  pairing.pairs = std::move(kept);
  std::sort(pairing.unmatched_golden.begin(), pairing.unmatched_golden.end());
  std::sort(pairing.unmatched_target.begin(), pairing.unmatched_target.end());
  return static_cast<int64_t>(released.size());
}

}  // namespace parity::matching
