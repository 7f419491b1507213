// parity/name_pattern.h — the regular expressions users write (--map rules, --include / --exclude,
// --kl, the text-log --regex of `parity curve`) and those parity runs over input it did not write (the
// Megatron and DeepSpeed text-log presets).
//
// RE2 syntax (https://github.com/google/re2/wiki/Syntax: Perl-like, without back-references and
// look-around), over bytes (`.` is one byte; a UTF-8 literal matches itself), matched by an automaton in
// time linear in the text: no pattern can make parity backtrack for hours. std::regex did (`re:(.*)+x` on a record name; fuzz/map.cpp), and it recursed once
// per character (a 50 KB log line overflowed the stack).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parity/status.h"

namespace re2 {
class RE2;
}

namespace parity {

// One match: where it is in the text, and its capture groups (groups[0] is group 1; nullopt for a group
// that took no part), as views into the text searched.
struct PatternMatch {
  size_t begin = 0, end = 0;
  std::vector<std::optional<std::string_view>> groups;
};

class NamePattern {
 public:
  // Compiles `pattern`; the error says "'<pattern>' is not a valid regular expression: <why>".
  static Result<NamePattern> compile(const std::string& pattern, bool case_insensitive = false);

  bool search(std::string_view text) const;      // somewhere in text
  bool full_match(std::string_view text) const;  // the whole text
  // When the pattern matches the whole text: `replacement` with $1…$99 replaced by the groups, $& by the
  // whole match and $$ by '$' (ECMAScript's spelling, as the --map file documents); nullopt otherwise.
  std::optional<std::string> replace_full_match(std::string_view text, const std::string& replacement) const;
  // The capture groups of the first match in text (groups[0] is group 1; nullopt for a group that took
  // no part in the match); false when the pattern does not match.
  bool search_groups(std::string_view text, std::vector<std::optional<std::string>>& groups) const;
  // The first match starting at or after `from`; false when there is none.
  bool find(std::string_view text, size_t from, PatternMatch& match) const;
  int group_count() const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::shared_ptr<const re2::RE2> re_;
  std::string pattern_;
};

// Checks that `replacement` names no group beyond `groups` ("$3" with two groups), for messages at
// parse time rather than empty text at match time.
Status check_replacement(const std::string& replacement, int groups);

}  // namespace parity
