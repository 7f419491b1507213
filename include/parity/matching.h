// parity/matching.h — pairing the records of two sources: by key, by a user mapping file (--map) and by
// an order-based sequence alignment (docs/alignment.md). run_compare (parity/compare.h) pairs the records
// with these before it measures them.
//
// Exact pairing (src/matching/exact.cpp) is by key (rank, step, name). Plain tensor files have
// rank = step = -1, so their key is the name alone. A record that finds no partner is returned as
// unmatched, never dropped; when one side holds the same key twice, the k-th occurrence pairs with the
// k-th occurrence on the other side and the extras stay unmatched.
//
// What exact names leave unmatched can be paired further (src/matching/mapping.cpp, align.cpp).
// Mapping file (text, one rule per line, '#' starts a comment):
//     TARGET => GOLDEN              exact: a whole name, or a module-path prefix ("model.decoder => model")
//     re:TARGET_REGEX => GOLDEN     regex over the whole target name; GOLDEN may use $1, $2, ... (ECMAScript)
// Rules are tried in file order; the first that applies gives the golden name looked up among the
// unmatched golden records of the same rank and step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parity/source.h"
#include "parity/name_pattern.h"
#include "parity/status.h"
#include "parity/verdict.h"

namespace parity::matching {

// ---- exact keys (exact.cpp) ----------------------------------------------------------------------

struct RecordFilter {
  int64_t step = -1;  // keep only records of this step (-1 = all); records without a step are kept
  int rank = -1;      // keep only records of this rank (-1 = all); records without a rank are kept
  std::string direction;  // "forward" | "backward" | "" (all); records without a direction are kept
  std::vector<NamePattern> include, exclude;  // names: kept when some include matches (or none is
                                              // given) and no exclude matches (NamePattern::search)
  bool keeps(const Record& r) const;
};

struct ExactPairing {
  // Indices into the golden / target record vectors, in golden listing order.
  std::vector<std::pair<size_t, size_t>> pairs;
  std::vector<size_t> unmatched_golden, unmatched_target;  // in each side's listing order
  int64_t filtered_golden = 0, filtered_target = 0;        // records left out by the filter
  // Each side held exactly one record and their names differ (`parity compare a.npy b.npy`): the two
  // were paired by position, since there is nothing else they could be compared with.
  bool single_by_position = false;
};

ExactPairing pair_exact(const RecordList& golden, const RecordList& target,
                        const RecordFilter& filter);

// Op events are named by their parent call and a per-op counter ("layers.0.attn/transpose#1/..."): the
// k-th call of an op in a module call. Where the two sides' op sequences of a call differ and an op runs
// a different number of times on each (another implementation: a chunked linear), its equal names are
// different calls, so its exactly-paired records are released to the unmatched lists for the order
// alignment (which pairs them with a confidence). An op that runs equally often on both sides keeps its
// exact pairs however the rest of the sequence differs — an op missing or added beside it (an attention
// without its 1/√d scaling) does not change which call "softmax#0" is — unless the two records of a
// pair differ in shape. Returns how many calls had records released.
int64_t release_diverging_op_sequences(const RecordList& golden, const RecordList& target,
                                       ExactPairing& pairing);

// ---- mapping file and alignment (mapping.cpp, align.cpp) -----------------------------------------

struct MapRule {
  bool is_regex = false;
  std::string target, golden;  // exact: name / prefix; regex: pattern / replacement
  std::optional<NamePattern> re;  // regex rules: the compiled pattern (RE2 syntax, parity/name_pattern.h)
  int line = 0;
};

struct NameMap {
  std::string file;
  std::vector<MapRule> rules;
  // The golden name for a target name, or "" when no rule applies.
  std::string apply(const std::string& target_name) const;
};

// Parses a mapping file; errors name the file and line.
Result<NameMap> load_name_map(const std::string& path);
Result<NameMap> parse_name_map(const std::string& text, const std::string& origin);

// Options of the order-based alignment.
struct AlignOptions {
  // Alignment is skipped (with a note) for a (rank, step) whose unmatched golden × target records exceed
  // this many DP cells.
  int64_t max_cells = 16'000'000;
};

// How a pair was matched, and how sure the pairing is: 1 for exact and mapped names; for an order
// alignment (1 − substitution cost) × (shorter / longer unmatched sequence of the module), capped below
// kStrongPairingConfidence when the module's two implementations differ, in (0, 1].
struct PairMatch {
  MatchKind kind = MatchKind::kExact;
  double confidence = 1.0;
};

// Extends an exact pairing in place with mapped pairs (when `map` has rules) and then aligned pairs
// (when `align`; only within one (rank, step, module path), after a wrapper prefix such as DDP's
// "module." is recognised), keeping pairs in golden listing order. Returns how every pair was matched
// (parallel to pairing.pairs); appends human-readable notes (what was skipped and why).
std::vector<PairMatch> extend_pairing(const RecordList& golden, const RecordList& target,
                                      ExactPairing& pairing, const NameMap* map, bool align,
                                      const AlignOptions& options, std::vector<std::string>& notes);

}  // namespace parity::matching
