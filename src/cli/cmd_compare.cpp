// `parity compare GOLDEN TARGET`: open both sources, compare_runs, render (table, CSV, JSON, HTML).
// Parse, call, render — the pipeline lives in src/pipeline, the maths in src/compare, the rules in
// src/judgement and src/diagnosis.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "parity/terminal_text.h"
#include "parity/json_number.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/html_option.h"
#include "cli/replay_runner.h"
#include "cli/ui.h"
#include "parity/compare.h"
#include "parity/compare_runs.h"
#include "parity/html_report.h"
#include "parity/diagnosis.h"
#include "parity/layout.h"
#include "parity/open_source.h"
#include "fmt/format.h"
#include "parity/thresholds.h"
#include "parity/compare_report.h"
#include "parity/schemas.h"

namespace parity::cli {

namespace {

struct CompareArgs {
  std::string golden, target;
  std::string golden_format, target_format, format;
  int64_t step = -1;
  int rank = -1;
  std::string direction;
  std::vector<std::string> include, exclude;
  int jobs = 0;
  std::string thresholds_file;
  std::optional<double> cosine, cosine_fail, max_abs, rel_l2, max_rel, kl_max, stats_rel;
  bool show_thresholds = false;
  std::vector<std::string> kl_patterns;
  std::string json_path, csv_path, arrow_path;
  std::string msprobe_csv_path, msprobe_xlsx_path;  // msprobe's compare_result layout (docs/compare-json.md "msprobe")
  std::string html_path;  // --html: self-contained report of the same JSON (docs/report.md)
  std::string sort = "worst";
  std::string sort_metric = "cosine";
  int64_t limit = 30;
  bool all = false;
  bool wide = false;  // --wide: names never shortened
  std::string map_file;   // --map: target→golden name rules (docs/alignment.md)
  std::string layout_file;  // --layout: how each run is laid out over parallel ranks (docs/layout.md)
  bool no_align = false;  // --no-align: no order-based alignment of unmatched events
  bool fixed_thresholds = false;
  bool replay = false;            // --replay: replay the top suspects in both runs (docs/replay.md)
  size_t replay_suspects = 5;     // --replay-suspects N
  bool fail_on_warn = false;      // --fail-on-warn: a warn verdict exits 1 too  // --fixed-thresholds: warn rows stay warn even when within rounding noise
};

// The threshold flags: each sets one thresholds-file field on every dtype; their help texts say the shipped
// defaults, generated from default_thresholds() (threshold_default_text), never restated here.
struct ThresholdFlag {
  const char* flag;
  const char* field;
  std::optional<double> CompareArgs::*value;
  const char* help;  // what the bound does; "(default ...)" is appended
};
constexpr ThresholdFlag kThresholdFlags[] = {
    {"--cosine", "cosine_pass", &CompareArgs::cosine, "Cosine needed to pass, every dtype"},
    {"--cosine-fail", "cosine_fail", &CompareArgs::cosine_fail, "Cosine below which a pair fails when its max abs error exceeds fail_min_abs"},
    {"--max-abs", "max_abs_fail", &CompareArgs::max_abs, "Max abs error above which a pair fails ('inf' = off)"},
    {"--rel-l2", "rel_l2_warn", &CompareArgs::rel_l2, "Relative L2 error above which a pair warns"},
    {"--max-rel", "max_rel_warn", &CompareArgs::max_rel, "Max relative error above which a pair warns"},
    {"--kl-max", "kl_pass", &CompareArgs::kl_max, "KL divergence at or above which a logits pair warns"},
    {"--stats-rel", "stats_rel_warn", &CompareArgs::stats_rel, "Statistics mode: relative error of Max/Min/Mean/Norm above which a pair warns"},
};

// The command line as typed, shell-quoted where needed (for the verdict line and the JSON).
std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out;
  size_t start = 0;
  bool first = true;
  while (start < raw.size()) {
    size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    std::string arg = raw.substr(start, end - start);
    if (first) {
      const size_t slash = arg.rfind('/');
      if (slash != std::string::npos) arg = arg.substr(slash + 1);  // "parity", not the build path
      first = false;
    }
    const bool plain = !arg.empty() && arg.find_first_not_of(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == std::string::npos;
    if (!out.empty()) out += ' ';
    if (plain) {
      out += arg;
    } else {
      out += '\'';
      for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
    start = end + 1;
  }
  return out.empty() ? "parity compare" : out;
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "parity compare: %s\n", terminal_text(message).c_str());
  return kExitUsage;
}

// Thresholds in effect (resolve_thresholds): defaults, then the file, then the flags (each on every dtype),
// then --fixed-thresholds.
Result<Thresholds> build_thresholds(const CompareArgs& a) {
  ThresholdSources sources;
  sources.file = a.thresholds_file;
  for (const ThresholdFlag& f : kThresholdFlags)
    if (const std::optional<double>& v = a.*(f.value)) sources.overrides.push_back({f.field, *v, f.flag});
  if (a.fixed_thresholds) sources.policy = VerdictPolicy::kFixedThresholds;
  return resolve_thresholds(sources);
}

// --msprobe-csv / --msprobe-xlsx (src/report/compare_msprobe.cpp); false when one could not be written
// (said on stderr, naming the file).
bool write_msprobe_outputs(const CompareArgs& a, const CompareResult& res, const RecordSource& golden,
                           const RecordSource& target) {
  bool ok = true;
  auto say = [&ok](const Status& st) {
    if (st.ok()) return;
    std::fprintf(stderr, "parity compare: %s\n", terminal_text(st.message()).c_str());
    ok = false;
  };
  if (!a.msprobe_csv_path.empty()) {
    say(write_output(a.msprobe_csv_path,
                     [&](std::FILE* f) { return report::write_msprobe_csv(res, golden, target, f); }));
    if (a.msprobe_csv_path == "-") std::fflush(stdout);
  }
  if (!a.msprobe_xlsx_path.empty()) say(report::write_msprobe_xlsx(res, golden, target, a.msprobe_xlsx_path));
  return ok;
}

// Options that cannot go together, before anything is opened ("" when they are fine).
std::string conflicting_outputs(const CompareArgs& a) {
  if (a.golden.empty() || a.target.empty()) return "GOLDEN and TARGET are required (see parity compare --help)";
  if ((a.json_path == "-") + (a.csv_path == "-") + (a.arrow_path == "-") + (a.msprobe_csv_path == "-") > 1)
    return "only one of --json, --csv, --arrow and --msprobe-csv can write to stdout ('-')";
  if (a.msprobe_xlsx_path == "-") return "--msprobe-xlsx -: an xlsx workbook is a zip file written in place; give a path";
  if (a.arrow_path == "-" && isatty(STDOUT_FILENO) != 0)
    return "--arrow -: stdout is a terminal; the Arrow file is binary (pipe it, or give a path)";
  return "";
}

CompareRunOptions run_options(const CompareArgs& a, const GlobalOptions& global, const Thresholds& th,
                              const DividedSources& sources, ProgressSink* progress) {
  CompareRunOptions opts;
  opts.compare.thresholds = th;
  opts.compare.step = a.step;
  opts.compare.rank = a.rank;
  opts.compare.direction = a.direction;
  opts.compare.include = a.include;
  opts.compare.exclude = a.exclude;
  opts.compare.jobs = a.jobs;
  opts.compare.kl_patterns = a.kl_patterns;
  opts.compare.map_file = a.map_file;
  opts.compare.align = !a.no_align;
  opts.compare.group = global.group;
  opts.compare.rank_shares = sources.shares ? &*sources.shares : nullptr;
  opts.compare.progress = progress;
  opts.command = command_line();
  opts.fail_on_warn = a.fail_on_warn;
  return opts;
}

report::TableOptions table_options(const CompareArgs& a, const GlobalOptions& global, bool machine_on_stdout) {
  report::TableOptions topt;
  topt.color = use_color(global, machine_on_stdout ? 2 : 1);
  topt.width = terminal_width();
  topt.limit = a.all ? 0 : a.limit;
  topt.verbose = global.verbose;
  topt.full_names = a.wide;
  topt.sort_metric = a.sort_metric;
  topt.sort = a.sort == "name"     ? report::SortKey::kName
              : a.sort == "order"  ? report::SortKey::kOrder
              : a.sort == "metric" ? report::SortKey::kMetric
                                   : report::SortKey::kWorst;
  return topt;
}

// A written output's failure, said on stderr; false when it failed.
bool said(const Status& st) {
  if (st.ok()) return true;
  std::fprintf(stderr, "parity compare: %s\n", terminal_text(st.message()).c_str());
  return false;
}

// --json, --html, --csv, --arrow and the msprobe layouts; false when one could not be written.
bool write_outputs(const CompareArgs& a, const CompareReport& report, const GlobalOptions& global,
                   const DividedSources& sources) {
  const CompareResult& res = report.result;
  bool ok = true;
  // Streamed row by row: a 100,000-row report never exists as one JSON tree in memory.
  if (!a.json_path.empty())
    ok &= said(write_output(a.json_path, [&](std::FILE* f) { return write_compare_report_json(report, f); }));
  if (!a.html_path.empty() && !write_html_option(a.html_path, compare_report_for_html(report), "compare", global))
    ok = false;
  if (a.csv_path == "-") {
    report::write_compare_csv(res, stdout);
    std::fflush(stdout);
  } else if (!a.csv_path.empty()) {
    ok &= said(write_output(a.csv_path, [&res](std::FILE* f) {
      report::write_compare_csv(res, f);
      return Status::OK();
    }));
  }
  if (!a.arrow_path.empty())
    ok &= said(write_output(a.arrow_path, [&res](std::FILE* f) { return report::write_compare_arrow(res, f); }));
  if (!write_msprobe_outputs(a, res, *sources.sources[0], *sources.sources[1])) ok = false;
  return ok;
}

// The terminal report: the table, unmatched records, problems, notes and findings — or, when nothing was
// compared, what was read and what was not (no empty table, issue 31 §4); --quiet names problems only.
void print_human(std::FILE* human, const CompareReport& report, const report::TableOptions& topt, bool quiet) {
  const CompareResult& res = report.result;
  if (quiet) {  // errors are never silent
    for (const Status& st : res.problems) std::fprintf(stderr, "parity compare: %s\n", terminal_text(st.message()).c_str());
    return;
  }
  if (report.no_input.empty()) print_config_diff(human, report.findings.config, topt.color);
  report::print_compare_header(human, res, topt);
  if (report.no_input.empty()) {
    report::print_compare_table(human, res, topt);
    report::print_compare_unmatched(human, res, topt);
  }
  report::print_compare_problems(human, res, topt);
  report::print_compare_notes(human, res, topt);
  std::fputc('\n', human);
  if (!report.no_input.empty()) return;
  print_findings(human, report.findings, res, topt.color);
  report::print_compare_shards(human, report, topt);
  std::fputc('\n', human);
  report::print_process_memory(human, res, topt.color);
}

// What ends the output: the headline, and on stderr why nothing was compared, rows measured for other
// processes, and a --replay that could not run.
void print_ending(std::FILE* human, const CompareReport& report, bool color) {
  const CompareResult& res = report.result;
  report::print_compare_verdict(human, res, report.elapsed_seconds, report.command, run_headline(report), color);
  if (!report.no_input.empty()) std::fprintf(stderr, "parity compare: %s\n", report.no_input.c_str());
  if (res.rows_measured_for_others > 0)  // a pairing that crossed the ranks' division: correct, but slower
    std::fprintf(stderr, "parity compare: process 0 measured %lld rows of other processes' ranks that they did not pair\n",
                 static_cast<long long>(res.rows_measured_for_others));
  if (!report.replay_problem.empty())  // --replay asked and could not run: said, never silent
    std::fprintf(stderr, "parity compare: --replay: %s\n", report.replay_problem.c_str());
}

int run(const CompareArgs& a, const GlobalOptions& global) {
  // Under mpirun only process 0 speaks; the others end with its exit status (main.cpp).
  const bool speaks = is_output_process(global.group);
  auto usage_error = [speaks](const std::string& message) { return speaks ? cli::usage_error(message) : kExitUsage; };
  Result<Thresholds> th = build_thresholds(a);
  if (!th.ok()) return usage_error(th.status().message());
  if (a.show_thresholds) {
    if (speaks) std::printf("%s\n", thresholds_to_json(*th).c_str());
    return kExitOk;
  }
  if (const std::string conflict = conflicting_outputs(a); !conflict.empty()) return usage_error(conflict);

  // --format forces both sides unless a side has its own.
  const std::string& golden_format = a.golden_format.empty() ? a.format : a.golden_format;
  const std::string& target_format = a.target_format.empty() ? a.format : a.target_format;
  // Under mpirun with captures of one folder per rank, each process other than 0 opens only its ranks.
  DividedSources sources = open_divided_sources({{a.golden, golden_format}, {a.target, target_format}}, global.group);
  Status opened = sources.status.ok() ? Status::OK()
                                      : sources.status.WithContext(sources.failed == 0 ? "cannot open golden"
                                                                                      : "cannot open target");
  if (opened.ok()) opened = layout::apply_layout(a.layout_file, sources);
  if (!opened_everywhere(global, opened, "compare")) return usage_error(opened.message());

  std::unique_ptr<ProgressSink> progress = make_progress(global);
  CompareRunOptions opts = run_options(a, global, *th, sources, progress.get());
  std::unique_ptr<EngineReplayRunner> replay;
  if (a.replay) {
    replay = std::make_unique<EngineReplayRunner>(a.golden, a.target);
    opts.replay = replay.get();
    opts.replay_suspects = a.replay_suspects;
  }
  Result<CompareReport> report = compare_runs(*sources.sources[0], *sources.sources[1], opts);
  if (!report.ok()) return usage_error(report.status().message());
  if (!speaks) return kExitOk;  // its rows went to process 0, which renders everything

  // Human output goes to stdout, or to stderr when stdout carries JSON or CSV.
  const bool machine_on_stdout =
      a.json_path == "-" || a.csv_path == "-" || a.arrow_path == "-" || a.msprobe_csv_path == "-";
  std::FILE* human = machine_on_stdout ? stderr : stdout;
  const report::TableOptions topt = table_options(a, global, machine_on_stdout);
  const int code = write_outputs(a, *report, global, sources) ? report->exit_code : kExitUsage;
  print_human(human, *report, topt, global.quiet);
  print_ending(human, *report, topt.color);
  return code;
}

}  // namespace

CommandAction setup_compare(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<CompareArgs>();
  sub.description(
      "Compare GOLDEN with TARGET tensor by tensor: pair records by name (and rank, step), compute every\n"
      "metric of the fused kernel, judge each pair against per-dtype thresholds (docs/thresholds.md).\n"
      "GOLDEN and TARGET: .npy, .npz, .safetensors files, directories of them, or capture runs.\n"
      "Exit: 0 pass or warn; 1 a pair failed or errored, a record was unmatched or a file unreadable (warn too\n"
      "with --fail-on-warn);\n"
      "2 usage error or an input that cannot be opened at all; 3 internal error.");
  sub.add_option("GOLDEN", a->golden, "Golden (reference) file, directory or run");
  sub.add_option("TARGET", a->target, "Target file, directory or run to check against GOLDEN");
  sub.add_option("--golden-format", a->golden_format, "Force GOLDEN's format (npy, npz, safetensors, ...; default: detect)");
  sub.add_option("--target-format", a->target_format, "Force TARGET's format (default: detect)");
  sub.add_option("--format", a->format, "Force both sides' format (msprobe, pt, npy, ...) unless --golden-format/--target-format say otherwise");
  sub.add_option("--step", a->step, "Only records of this capture step (plain files have none; default: all)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--rank", a->rank, "Only records of this rank (default: all)")->check(CLI::NonNegativeNumber);
  sub.add_option("--direction", a->direction, "Only records of this direction (capture runs; default: all)")
      ->check(CLI::IsMember({"forward", "backward", "optimizer"}));
  sub.add_option("--include", a->include, "Regex (repeatable): compare only records whose name matches one")
      ->allow_extra_args(false);
  sub.add_option("--exclude", a->exclude, "Regex (repeatable): leave out records whose name matches")
      ->allow_extra_args(false);
  sub.add_option("-j,--jobs", a->jobs, "Worker threads (default 0 = all cores)")->check(CLI::NonNegativeNumber);
  sub.add_option("--thresholds", a->thresholds_file,
                 "JSON file overlaying the default thresholds ({\"bf16\": {\"cosine_pass\": 0.998}, \"all\": {...}})");
  for (const ThresholdFlag& f : kThresholdFlags)
    sub.add_option(f.flag, (*a).*(f.value), fmt::format("{} (default {})", f.help, threshold_default_text(f.field)));
  sub.add_flag("--show-thresholds", a->show_thresholds, "Print the thresholds in effect (JSON) and exit");
  sub.add_option("--kl", a->kl_patterns,
                 "Regex (repeatable): names whose pairs also get softmax KL along the last dim (names containing 'logits' always do)")
      ->allow_extra_args(false);
  sub.add_option("--json", a->json_path, std::string("Write the result as JSON (schema ") + schemas::kCompare.id + ", " + schemas::kCompare.doc +
                     "); '-' = stdout, table to stderr");
  add_html_option(sub, a->html_path);
  sub.add_option("--csv", a->csv_path, std::string("Write one CSV line per pair (schema ") + schemas::kCompareCsv.id + "); '-' = stdout, table to stderr");
  sub.add_option("--arrow", a->arrow_path,
                 std::string("Write the CSV's rows and columns, typed, as an Arrow IPC file (schema ") + schemas::kCompareArrow.id + "; "
                 "pyarrow, polars, pandas, DuckDB read it)");
  sub.add_option("--msprobe-csv", a->msprobe_csv_path,
                 "Write the rows as msprobe's compare_result CSV (its columns and words, NPU = TARGET, Bench = GOLDEN; "
                 "docs/compare-json.md \"msprobe\"); '-' = stdout");
  sub.add_option("--msprobe-xlsx", a->msprobe_xlsx_path,
                 "Write the same table as msprobe's compare_result xlsx workbook (sheet Sheet1)");
  sub.add_option("--sort", a->sort, "Table order: worst (verdict, then rel L2), name, order (execution order), metric")
      ->check(CLI::IsMember({"worst", "name", "order", "metric"}))
      ->capture_default_str();
  sub.add_option("--sort-metric", a->sort_metric, "Metric for --sort metric, worst first")
      ->check(CLI::IsMember(report::sortable_metrics()))
      ->capture_default_str();
  sub.add_option("--limit", a->limit, "Table rows shown (then '... N more')")->check(CLI::NonNegativeNumber)->capture_default_str();
  sub.add_flag("--all", a->all, "Show every row (same as --limit 0)");
  sub.add_flag("--wide", a->wide, "Print names whole, however long the lines get (default: shortened to the terminal, "
                                  "keeping layer indices, the leaf module and the op#k/direction/role/index tail)");
  sub.add_option("--map", a->map_file,
                 "Name mapping file for records left unmatched: 'TARGET => GOLDEN' or 're:REGEX => GOLDEN' per line (docs/alignment.md)");
  sub.add_option("--layout", a->layout_file,
                 "Layout file: how modules split across tensor-parallel ranks and how each run is laid out (TP, PP, "
                 "DP); a sharded run's shards are merged into the logical tensors before they are compared (docs/layout.md)");
  sub.add_flag("--no-align", a->no_align, "Do not pair unmatched capture events by execution-order alignment");
  sub.add_flag("--replay", a->replay,
               "Replay the top suspects' ops in both runs (tensor-mode captures at level op or mix; needs a Python "
               "with torch, docs/replay.md): each is confirmed (creates the error given its inputs) or refuted (only "
               "carries it), and the suspects are re-ranked");
  sub.add_option("--replay-suspects", a->replay_suspects, "How many top suspects --replay replays (default 5)")
      ->check(CLI::PositiveNumber);
  sub.add_flag("--fail-on-warn", a->fail_on_warn,
               "Exit 1 on a warn verdict too (by default only fail and error do: elevated rows, weak pairings and "
               "layout changes warn without failing the gate)");
  sub.add_flag("--fixed-thresholds", a->fixed_thresholds,
               "Judge by the fixed thresholds alone (policy fixed-thresholds). By default the noise model decides: "
               "rows within rounding noise pass, elevated rows warn, structural rows fail (docs/judgement.md)");
  return [a, &global] { return run(*a, global); };
}

}  // namespace parity::cli
