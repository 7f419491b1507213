// `parity overflow RUN`: where NaN/Inf are born in one run (no golden needed), fp16 near-overflow
// warnings and gradient underflow statistics with the loss-scale direction (docs/diagnosis.md).
// Parse, call, render — the analysis lives in src/analysis/overflow.cpp.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "parity/terminal_text.h"
#include "parity/json_number.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/html_option.h"
#include "cli/ui.h"
#include "parity/analysis.h"
#include "parity/diagnosis.h"
#include "parity/open_source.h"
#include "parity/schemas.h"

namespace parity::cli {
namespace {

struct OverflowArgs {
  std::string run, format, json_path;
  std::string html_path;  // --html
  int64_t step = -1;
  int rank = -1;
  double near_fraction = 0.5;
  double underflow_fraction = 0.5;
};

int run_overflow(const OverflowArgs& a, const GlobalOptions& global) {
  // Under mpirun only process 0 speaks; the others end with its exit status (main.cpp).
  const bool speaks = is_output_process(global.group);
  // Under mpirun with a capture of one folder per rank, each process other than 0 opens only its ranks.
  DividedSources src = open_divided_sources({{a.run, a.format}}, global.group);
  const Status opened = src.status.ok() ? Status::OK() : src.status.WithContext("cannot open " + a.run);
  if (!opened_everywhere(global, opened, "overflow")) {
    if (speaks) std::fprintf(stderr, "parity overflow: %s\n", terminal_text(opened.message()).c_str());
    return kExitUsage;
  }
  OverflowOptions opt;
  opt.step = a.step;
  opt.rank = a.rank;
  opt.near_overflow_fraction = a.near_fraction;
  opt.underflow_warn_fraction = a.underflow_fraction;
  opt.group = global.group;
  opt.rank_shares = src.shares ? &*src.shares : nullptr;
  OverflowReport rep = analyse_overflow(*src.sources[0], opt);
  if (!speaks) return kExitOk;  // its statistics went to process 0, which renders everything
  // Nothing inspected is no answer, never "no NaN/Inf born" (issue 33 §2: an empty .npz exited 0): exit 2,
  // with what could not be read.
  if (rep.measured == 0) {
    std::fprintf(stderr, "parity overflow: no usable input: %s: %s\n", terminal_text(a.run).c_str(),
                 rep.records > 0 ? "no record has statistics or tensor data to inspect" : "holds no readable records");
    for (const Status& st : rep.problems)
      std::fprintf(stderr, "parity overflow: unreadable: %s\n", terminal_text(st.message()).c_str());
    return kExitUsage;
  }
  const bool json_stdout = a.json_path == "-";
  if (!a.json_path.empty()) {
    Status st = write_output(a.json_path, json_text(overflow_to_json(rep), 2) + "\n");
    if (!st.ok()) {
      std::fprintf(stderr, "parity overflow: %s\n", terminal_text(st.message()).c_str());
      return kExitUsage;
    }
  }
  if (!a.html_path.empty() && !write_html_option(a.html_path, overflow_to_json(rep), "overflow", global)) return kExitUsage;
  if (!global.quiet) print_overflow(json_stdout ? stderr : stdout, rep, use_color(global, json_stdout ? 2 : 1));
  // The one verdict line every command ends with (--quiet keeps only it).
  std::FILE* out = json_stdout ? stderr : stdout;
  if (!global.quiet) std::fputc('\n', out);
  print_overflow_verdict(out, rep);
  return gate_exit_code(overflow_verdict(rep), WarnGate::kFails);
}

}  // namespace

CommandAction setup_overflow(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<OverflowArgs>();
  sub.description(
      "Find where NaN/Inf are born in RUN: per rank and step, the first event (execution order) whose inputs\n"
      "are finite and whose outputs are not, with the input ranges that explain it and how many later events\n"
      "are contaminated; fp16 near-overflow warnings (|x| > 0.5 x 65504) and gradient underflow statistics\n"
      "(zero/subnormal fraction per parameter) with the loss-scale direction. No golden needed.\n"
      "Exit: 0 nothing found; 1 NaN/Inf, gradient overflow/underflow or unreadable records; 2 usage error.");
  sub.add_option("RUN", a->run, "Capture run, msprobe dump, tensor file or directory")->required();
  sub.add_option("--format", a->format, "Force RUN's format (default: detect)");
  sub.add_option("--step", a->step, "Only this step (default: all)")->check(CLI::NonNegativeNumber);
  sub.add_option("--rank", a->rank, "Only this rank (default: all)")->check(CLI::NonNegativeNumber);
  sub.add_option("--near", a->near_fraction, "Near-overflow warning above this fraction of the dtype's max")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  sub.add_option("--underflow", a->underflow_fraction, "A gradient underflows when this share is zero or subnormal")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  sub.add_option("--json", a->json_path, std::string("Write the report as JSON (schema ") + schemas::kOverflow.id + "); '-' = stdout");
  add_html_option(sub, a->html_path);
  return [a, &global] { return run_overflow(*a, global); };
}

}  // namespace parity::cli
