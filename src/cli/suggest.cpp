// "did you mean": the closest known subcommand or option for a misspelled one (edit distance).
#include "cli/suggest.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace parity::cli {

namespace {

// Levenshtein distance (insert, delete, substitute: 1 each), the usual measure for typos.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

const CLI::App* find_subcommand(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_name() == name) return sub;
  return nullptr;
}

}  // namespace

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;  // at most a third of the word (≥ 2) may be wrong
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) best = c, best_d = d;
  }
  return best;
}

void print_did_you_mean(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) commands.push_back(sub->get_name());
  const CLI::App* sub = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--color") {
      ++i;  // the global option's value
      continue;
    }
    if (!sub && !arg.empty() && arg[0] != '-') {
      sub = find_subcommand(app, arg);
      if (!sub) {
        const std::string guess = closest(arg, commands);
        if (!guess.empty()) std::fprintf(stderr, "parity: unknown command '%s': did you mean '%s'?\n", arg.c_str(), guess.c_str());
        return;
      }
      continue;
    }
    if (sub && arg.rfind("--", 0) == 0 && arg.size() > 2) {
      const std::string name = arg.substr(2, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - 2);
      std::vector<std::string> options;
      for (const CLI::Option* o : sub->get_options())
        for (const std::string& l : o->get_lnames()) options.push_back(l);
      if (std::find(options.begin(), options.end(), name) != options.end()) continue;
      const std::string guess = closest(name, options);
      if (!guess.empty())
        std::fprintf(stderr, "parity %s: unknown option '--%s': did you mean '--%s'?\n", sub->get_name().c_str(),
                     name.c_str(), guess.c_str());
    }
  }
}

}  // namespace parity::cli
