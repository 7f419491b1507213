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

namespace {

std::vector<std::string> long_option_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& l : o->get_lnames()) out.push_back(l);
  return out;
}

const CLI::Option* find_long_option(const CLI::App& app, const std::string& name) {
  for (const CLI::Option* o : app.get_options())
    for (const std::string& l : o->get_lnames())
      if (l == name) return o;
  return nullptr;
}

std::string command_path(const CLI::App& app) {
  return app.get_parent() ? command_path(*app.get_parent()) + " " + app.get_name() : "parity";
}

}  // namespace

void print_did_you_mean(const CLI::App& app, int argc, char** argv) {
  // Walk the words as the parser does: each word that is not an option names a subcommand of the
  // current command while it has subcommands (`eval pll` is looked up among eval's); options are looked
  // up in the current command, then among the global ones (`--colour` before the subcommand).
  const CLI::App* cur = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) == 0 && arg.size() > 2) {
      const size_t eq = arg.find('=');
      const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      const CLI::Option* known = find_long_option(*cur, name);
      if (!known && cur != &app) known = find_long_option(app, name);
      if (known) {
        if (eq == std::string::npos && known->get_items_expected_max() > 0) ++i;  // its value
        continue;
      }
      std::vector<std::string> options = long_option_names(*cur);
      if (cur != &app)
        for (const std::string& g : long_option_names(app)) options.push_back(g);
      const std::string guess = closest(name, options);
      if (!guess.empty())
        std::fprintf(stderr, "%s: unknown option '--%s': did you mean '--%s'?\n", command_path(*cur).c_str(),
                     name.c_str(), guess.c_str());
      continue;
    }
    if (arg.empty() || arg[0] == '-') continue;
    const std::vector<const CLI::App*> subs = cur->get_subcommands([](const CLI::App*) { return true; });
    if (subs.empty()) continue;  // a positional argument of the command
    if (const CLI::App* sub = find_subcommand(*cur, arg)) {
      cur = sub;
      continue;
    }
    std::vector<std::string> names;
    for (const CLI::App* sub : subs) names.push_back(sub->get_name());
    const std::string guess = closest(arg, names);
    if (!guess.empty())
      std::fprintf(stderr, "%s: unknown command '%s': did you mean '%s'?\n", command_path(*cur).c_str(), arg.c_str(),
                   guess.c_str());
    return;
  }
}

}  // namespace parity::cli
