// NamePattern (parity/name_pattern.h): RE2 behind a small value type.
#include "parity/name_pattern.h"

#include <re2/re2.h>

#include <cctype>
#include <vector>

namespace parity {

namespace {

// "$N" / "$NN" at replacement[i] (i at the '$'): the group number and the length of the reference, or
// {-1, 0} when replacement[i] does not start one.
std::pair<int, size_t> group_reference(const std::string& r, size_t i) {
  if (i + 1 >= r.size() || !std::isdigit(static_cast<unsigned char>(r[i + 1]))) return {-1, 0};
  int n = r[i + 1] - '0';
  size_t len = 2;
  if (i + 2 < r.size() && std::isdigit(static_cast<unsigned char>(r[i + 2]))) {
    n = n * 10 + (r[i + 2] - '0');
    len = 3;
  }
  return {n, len};
}

}  // namespace

Result<NamePattern> NamePattern::compile(const std::string& pattern, bool case_insensitive) {
  RE2::Options options;
  options.set_log_errors(false);
  // Bytes, not UTF-8: names and log lines from other tools may hold any byte, and in UTF-8 mode an invalid
  // byte matches no class and no '.'. A UTF-8 literal in a pattern still matches the same bytes.
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_case_sensitive(!case_insensitive);
  auto re = std::make_shared<const RE2>(pattern, options);
  if (!re->ok()) return Status::Invalid("'" + pattern + "' is not a valid regular expression: " + re->error());
  NamePattern p;
  p.re_ = std::move(re);
  p.pattern_ = pattern;
  return p;
}

bool NamePattern::search(std::string_view text) const { return RE2::PartialMatch(text, *re_); }

bool NamePattern::full_match(std::string_view text) const { return RE2::FullMatch(text, *re_); }

int NamePattern::group_count() const { return re_->NumberOfCapturingGroups(); }

bool NamePattern::search_groups(std::string_view text, std::vector<std::optional<std::string>>& groups) const {
  const int n = group_count();
  std::vector<re2::StringPiece> pieces(static_cast<size_t>(n) + 1);
  if (!re_->Match(text, 0, text.size(), RE2::UNANCHORED, pieces.data(), n + 1)) return false;
  groups.assign(static_cast<size_t>(n), std::nullopt);
  for (int i = 0; i < n; ++i) {
    const re2::StringPiece& g = pieces[static_cast<size_t>(i) + 1];
    if (g.data() != nullptr) groups[static_cast<size_t>(i)] = std::string(g);
  }
  return true;
}

bool NamePattern::find(std::string_view text, size_t from, PatternMatch& match) const {
  const int n = group_count();
  std::vector<re2::StringPiece> pieces(static_cast<size_t>(n) + 1);
  if (from > text.size() || !re_->Match(text, from, text.size(), RE2::UNANCHORED, pieces.data(), n + 1)) return false;
  match.begin = static_cast<size_t>(pieces[0].data() - text.data());
  match.end = match.begin + pieces[0].size();
  match.groups.assign(static_cast<size_t>(n), std::nullopt);
  for (int i = 0; i < n; ++i) {
    const re2::StringPiece& g = pieces[static_cast<size_t>(i) + 1];
    if (g.data() != nullptr) match.groups[static_cast<size_t>(i)] = std::string_view(g.data(), g.size());
  }
  return true;
}

std::optional<std::string> NamePattern::replace_full_match(std::string_view text, const std::string& replacement) const {
  const int n = group_count();
  std::vector<re2::StringPiece> g(static_cast<size_t>(n) + 1);
  if (!re_->Match(text, 0, text.size(), RE2::ANCHOR_BOTH, g.data(), n + 1)) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < replacement.size(); ++i) {
    const char c = replacement[i];
    if (c != '$' || i + 1 >= replacement.size()) {
      out += c;
      continue;
    }
    if (replacement[i + 1] == '$') {
      out += '$';
      ++i;
    } else if (replacement[i + 1] == '&') {
      out.append(g[0].data(), g[0].size());
      ++i;
    } else if (auto [k, len] = group_reference(replacement, i); k >= 0 && k <= n) {
      out.append(g[static_cast<size_t>(k)].data(), g[static_cast<size_t>(k)].size());
      i += len - 1;
    } else {
      out += c;
    }
  }
  return out;
}

Status check_replacement(const std::string& replacement, int groups) {
  for (size_t i = 0; i < replacement.size(); ++i) {
    if (replacement[i] != '$') continue;
    if (i + 1 < replacement.size() && replacement[i + 1] == '$') {
      ++i;
      continue;
    }
    auto [k, len] = group_reference(replacement, i);
    if (k > groups)
      return Status::Invalid("'" + replacement + "' refers to group $" + std::to_string(k) + " but the pattern has " +
                             std::to_string(groups) + (groups == 1 ? " group" : " groups"));
    if (len > 0) i += len - 1;
  }
  return Status::OK();
}

}  // namespace parity
