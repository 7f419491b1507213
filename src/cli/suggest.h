// src/cli/suggest.h — "did you mean" for misspelled subcommands and options.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace parity::cli {

// The candidate closest to `word` by edit distance, or "" when none is close (more than a third of the
// word, at least 2 edits, would have to change).
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

// After a parse error: names the closest known subcommand for an unknown one, and the closest option of
// the subcommand for each unknown `--option`, on stderr.
void print_did_you_mean(const CLI::App& app, int argc, char** argv);

}  // namespace parity::cli
