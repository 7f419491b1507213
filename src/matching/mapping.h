// matching/mapping.h — pairing what exact names leave unmatched: a user mapping file (--map) and an
// order-based sequence alignment (docs/alignment.md).
//
// Mapping file (text, one rule per line, '#' starts a comment):
//     TARGET => GOLDEN              exact: a whole name, or a module-path prefix ("model.decoder => model")
//     re:TARGET_REGEX => GOLDEN     regex over the whole target name; GOLDEN may use $1, $2, ... (ECMAScript)
// Rules are tried in file order; the first that applies gives the golden name looked up among the
// unmatched golden records of the same rank and step.
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "matching/exact.h"
#include "parity/compare.h"
#include "parity/status.h"

namespace parity::matching {

struct MapRule {
  bool is_regex = false;
  std::string target, golden;  // exact: name / prefix; regex: pattern / replacement
  std::regex re;
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
// alignment (1 − substitution cost) × (shorter / longer unmatched sequence of the module), in (0, 1].
struct PairMatch {
  MatchKind kind = MatchKind::kExact;
  double confidence = 1.0;
};

// Extends an exact pairing in place with mapped pairs (when `map` has rules) and then aligned pairs
// (when `align`; only within one (rank, step, module path)), keeping pairs in golden listing order.
// Returns how every pair was matched (parallel to pairing.pairs); appends human-readable notes (what
// was skipped and why).
std::vector<PairMatch> extend_pairing(const std::vector<Record>& golden, const std::vector<Record>& target,
                                      ExactPairing& pairing, const NameMap* map, bool align,
                                      const AlignOptions& options, std::vector<std::string>& notes);

}  // namespace parity::matching
