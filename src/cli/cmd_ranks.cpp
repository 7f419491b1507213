// `parity ranks RUN` — are the ranks of one run consistent step by step? (docs/curves.md) Under mpirun
// the processes read a parity run's ranks in shares and process 0 renders (docs/cli.md "Many processes").
#include <cstdio>
#include <fstream>

#include "parity/terminal_text.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/html_option.h"
#include "cli/ui.h"
#include "parity/curves.h"
#include "parity/schemas.h"

namespace parity::cli {

namespace {

struct RanksArgs {
  std::string run;
  std::string format;
  std::vector<std::string> metrics;
  double rel_tol = 1e-5;
  int consecutive = 1;
  std::string json_path, csv_path;
  std::string html_path;  // --html
};

int usage_error(const std::string& m) {
  std::fprintf(stderr, "parity ranks: %s\n", terminal_text(m).c_str());
  return kExitUsage;
}

int run(const RanksArgs& a, const GlobalOptions& global) {
  if (a.json_path == "-" && a.csv_path == "-") return usage_error("--json - and --csv - cannot both write to stdout");
  curves::ReadOptions ro;
  ro.format = a.format;
  ro.group = global.group;  // under mpirun each process reads its share of a parity run's ranks
  auto run = curves::read_curves(a.run, ro);
  if (!is_output_process(global.group)) return run.ok() ? kExitOk : kExitUsage;  // process 0 speaks
  if (!run.ok()) return usage_error(run.status().message());
  curves::RankOptions o;
  o.metrics = a.metrics;
  o.rel_tol = a.rel_tol;
  o.consecutive = a.consecutive;
  auto res = curves::compare_ranks(*run, o);
  if (!res.ok()) return usage_error(res.status().message());
  const bool machine_on_stdout = a.json_path == "-" || a.csv_path == "-";
  if (!machine_on_stdout) {
    std::string text = global.quiet ? std::string("ranks: ") + verdict_name(res->verdict) + "\n"
                                    : curves::rank_comparison_text(*res, terminal_width(), use_color(global),
                                                                   colorize_verdict);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  if (!a.json_path.empty()) {
    Status st = write_output(a.json_path, curves::rank_comparison_json(*res) + "\n");
    if (!st.ok()) return usage_error(st.message());
  }
  if (!a.csv_path.empty()) {
    Status st = write_output(a.csv_path, curves::rank_comparison_csv(*res));
    if (!st.ok()) return usage_error(st.message());
  }
  if (!a.html_path.empty() && !write_html_option(a.html_path, curves::rank_comparison_json(*res), "ranks", global)) return kExitUsage;
  return gate_exit_code(res->verdict, WarnGate::kFails);
}

}  // namespace

CommandAction setup_ranks(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<RanksArgs>();
  sub.add_option("run", a->run, "A run with per-rank scalars (parity run dir, JSONL/CSV with a rank column, ...)")
      ->required();
  sub.add_option("--format", a->format, "Input format (default: detect)")->check(CLI::IsMember(curves::curve_formats()));
  sub.add_option("--metric", a->metrics, "Metrics to check (default: every metric logged by two or more ranks)");
  sub.add_option("--rel-tol", a->rel_tol, "Relative deviation from the ranks' median that counts as a disagreement")
      ->capture_default_str();
  sub.add_option("--consecutive", a->consecutive, "Disagreeing steps in a row that name a rank")->capture_default_str();
  sub.add_option("--json", a->json_path, std::string("Write ") + schemas::kRanks.id + " JSON to FILE ('-' = stdout)");
  add_html_option(sub, a->html_path);
  sub.add_option("--csv", a->csv_path, std::string("Write ") + schemas::kRanksCsv.id + " to FILE ('-' = stdout)");
  return [a, &global] { return run(*a, global); };
}

}  // namespace parity::cli
