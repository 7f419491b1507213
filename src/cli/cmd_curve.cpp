// `parity curve GOLDEN TARGET` — compare two runs' scalar curves (docs/curves.md). Parses options,
// calls parity::curves, renders.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "parity/terminal_text.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/html_option.h"
#include "cli/ui.h"
#include "parity/curves.h"
#include "parity/schemas.h"

namespace parity::cli {

namespace {

struct CurveArgs {
  std::string golden, target;
  std::string format, step_key, preset, regex, fields;
  std::string run_name, golden_run, target_run;  // --run, --golden-run, --target-run
  std::vector<std::string> metrics, tols;
  int rank = -1, windows = 10, spike_window = 21, final_window = 0;
  double spike_k = 6.0;
  bool counters = false;
  std::string json_path, csv_path;
  std::string html_path;  // --html
};

int usage_error(const std::string& m) {
  std::fprintf(stderr, "parity curve: %s\n", terminal_text(m).c_str());
  return kExitUsage;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

// "--tol loss=0.01,10,0.005" → rel_tol, consecutive, final_tol (later fields optional).
Status parse_tol(const std::string& spec, curves::CurveOptions& o) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) return Status::Invalid("--tol expects METRIC=REL[,K[,FINAL]], got '" + spec + "'");
  std::string metric = curves::canonical_metric(spec.substr(0, eq));
  curves::Tolerance t = curves::default_tolerance(metric);
  std::vector<std::string> parts = split(spec.substr(eq + 1), ',');
  try {
    if (parts.size() > 0) t.rel_tol = std::stod(parts[0]);
    if (parts.size() > 1) t.consecutive = std::stoi(parts[1]);
    if (parts.size() > 2) t.final_tol = std::stod(parts[2]);
  } catch (const std::exception&) {
    return Status::Invalid("--tol '" + spec + "': not a number");
  }
  if (parts.empty() || parts.size() > 3 || t.rel_tol < 0 || t.consecutive < 1 || t.final_tol < 0)
    return Status::Invalid("--tol '" + spec + "': expected METRIC=REL[,K[,FINAL]] with REL, FINAL >= 0 and K >= 1");
  o.tolerances[metric] = t;
  return Status::OK();
}

int run(const CurveArgs& a, const GlobalOptions& global) {
  if (a.json_path == "-" && a.csv_path == "-") return usage_error("--json - and --csv - cannot both write to stdout");
  curves::ReadOptions ro;
  ro.format = a.format;
  ro.step_key = a.step_key;
  ro.preset = a.preset;
  ro.regex = a.regex;
  ro.regex_fields = split(a.fields, ',');
  curves::CurveOptions co;
  for (const auto& m : a.metrics)
    for (const auto& part : split(m, ',')) co.metrics.push_back(part);
  for (const auto& t : a.tols) {
    Status st = parse_tol(t, co);
    if (!st.ok()) return usage_error(st.message());
  }
  co.rank = a.rank;
  co.windows = a.windows;
  co.spike_window = a.spike_window;
  co.spike_k = a.spike_k;
  co.final_window = a.final_window;
  co.counters = a.counters;
  curves::ReadOptions golden_ro = ro, target_ro = ro;
  golden_ro.run = a.golden_run.empty() ? a.run_name : a.golden_run;
  target_ro.run = a.target_run.empty() ? a.run_name : a.target_run;
  auto runs = curves::read_curve_pair(a.golden, a.target, golden_ro, target_ro);
  if (!runs.ok()) return usage_error(runs.status().message());
  auto cmp = curves::compare_curves(runs->first, runs->second, co);
  if (!cmp.ok()) return usage_error(cmp.status().message());
  const bool machine_on_stdout = a.json_path == "-" || a.csv_path == "-";
  if (!machine_on_stdout && !global.quiet) {
    std::string text = curves::curve_comparison_text(*cmp, terminal_width(), use_color(global), colorize_verdict,
                                                     global.verbose);
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else if (!machine_on_stdout) {
    std::printf("curve: %s\n", verdict_name(cmp->verdict));
  }
  if (!a.json_path.empty()) {
    Status st = write_output(a.json_path, curves::curve_comparison_json(*cmp) + "\n");
    if (!st.ok()) return usage_error(st.message());
  }
  if (!a.csv_path.empty()) {
    Status st = write_output(a.csv_path, curves::curve_comparison_csv(*cmp));
    if (!st.ok()) return usage_error(st.message());
  }
  if (!a.html_path.empty() && !write_html_option(a.html_path, curves::curve_comparison_json(*cmp), "curve", global)) return kExitUsage;
  return gate_exit_code(cmp->verdict, WarnGate::kFails);
}

}  // namespace

CommandAction setup_curve(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<CurveArgs>();
  sub.add_option("golden", a->golden, "Golden run: parity run dir, CSV/JSONL, TensorBoard events, trainer_state.json, text log")->required();
  sub.add_option("target", a->target, "Target run (same kinds of input)")->required();
  sub.add_option("--format", a->format, "Input format for both (default: detect)")
      ->check(CLI::IsMember(curves::curve_formats()));
  sub.add_option("--run", a->run_name, "TensorBoard log directory: the run (its folder, relative to the directory) to read in both inputs");
  sub.add_option("--golden-run", a->golden_run, "TensorBoard: the golden input's run (overrides --run)");
  sub.add_option("--target-run", a->target_run, "TensorBoard: the target input's run (overrides --run)");
  sub.add_option("--step-key", a->step_key, "CSV/JSONL column holding the step");
  sub.add_option("--preset", a->preset, "Text log preset: megatron | deepspeed (default: try both)")
      ->check(CLI::IsMember({"megatron", "deepspeed"}));
  sub.add_option("--regex", a->regex, "Text logs: RE2 regular expression (linear time; no backreferences or lookaround), one match per line");
  sub.add_option("--fields", a->fields, "Names of the --regex capture groups in order, one of them 'step'");
  sub.add_option("--metric", a->metrics, "Metrics to compare (comma-separated; default: all shared, non-timing)");
  sub.add_flag("--counters", a->counters, "Compare counters too (consumed samples, batch size, epoch, step-like series)");
  sub.add_option("--tol", a->tols, "Per-metric tolerance METRIC=REL[,K[,FINAL]] (docs/curves.md)");
  sub.add_option("--rank", a->rank, "Which rank's series (default: rank-less, else the lowest rank)");
  sub.add_option("--windows", a->windows, "Number of windows for per-window statistics")->capture_default_str();
  sub.add_option("--spike-window", a->spike_window, "Rolling-median window for spikes")->capture_default_str();
  sub.add_option("--spike-k", a->spike_k, "Spike threshold in robust sigmas (1.4826·MAD)")->capture_default_str();
  sub.add_option("--final-window", a->final_window, "Points averaged for the final value (0 = auto)");
  sub.add_option("--json", a->json_path, std::string("Write ") + schemas::kCurve.id + " JSON to FILE ('-' = stdout)");
  add_html_option(sub, a->html_path);
  sub.add_option("--csv", a->csv_path, std::string("Write ") + schemas::kCurveCsv.id + " to FILE ('-' = stdout)");
  return [a, &global] { return run(*a, global); };
}

}  // namespace parity::cli
