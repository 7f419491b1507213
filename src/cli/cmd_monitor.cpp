// `parity monitor RUN` — trouble in one training run, without a golden (docs/monitor.md): parse, call
// monitor::monitor_run, print.
#include <cstdio>

#include "cli/command.h"
#include "cli/output.h"
#include "cli/ui.h"
#include "parity/monitor.h"
#include "parity/schemas.h"
#include "parity/terminal_text.h"

namespace parity::cli {

namespace {

struct MonitorArgs {
  std::string run;
  std::string json_path;
  monitor::MonitorOptions options;
};

int run(const MonitorArgs& a, const GlobalOptions& global) {
  auto report = monitor::monitor_run(a.run, a.options);
  if (!report.ok()) {
    std::fprintf(stderr, "parity monitor: %s\n", terminal_text(report.status().message()).c_str());
    return kExitUsage;
  }
  if (a.json_path != "-") {
    const std::string text = global.quiet ? std::string(monitor::monitor_found_trouble(*report) ? "TROUBLE" : "QUIET") + "\n"
                                          : monitor::monitor_text(*report, use_color(global));
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  if (!a.json_path.empty()) {
    if (Status st = write_output(a.json_path, monitor::monitor_json(*report) + "\n"); !st.ok()) {
      std::fprintf(stderr, "parity monitor: %s\n", terminal_text(st.message()).c_str());
      return kExitUsage;
    }
  }
  if (report->records == 0) return kExitUsage;  // nothing to watch: no answer
  return gate_exit_code(monitor::monitor_found_trouble(*report) ? Verdict::kFail : Verdict::kPass, WarnGate::kShown);
}

}  // namespace

CommandAction setup_monitor(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<MonitorArgs>();
  monitor::MonitorOptions& o = a->options;
  sub.add_option("run", a->run, "A parity capture run (statistics or tensors; optimizer states and updates recorded for "
                                "the optimizer checks, docs/capture.md)")->required();
  sub.add_option("--spike-window", o.spike_window, "Logged values a spike is measured against (trailing)")->capture_default_str();
  sub.add_option("--spike-k", o.spike_k, "Robust deviations (1.4826 MAD) above the trailing median that make a spike")->capture_default_str();
  sub.add_option("--spike-rel", o.spike_rel, "Least excess over the trailing median, as a fraction of it, that makes a spike")->capture_default_str();
  sub.add_option("--ratio-high", o.ratio_high, "Largest |update| / |weight| of one step that is not an anomaly")->capture_default_str();
  sub.add_option("--ratio-low", o.ratio_low, "Smallest nonzero |update| / |weight| of one step that is not an anomaly")->capture_default_str();
  sub.add_option("--stagnant-fraction", o.stagnant_fraction, "Share of a parameter's elements left exactly in place by a step "
                                                             "(lr > 0) that makes it stagnant")->capture_default_str();
  sub.add_option("--moment-jump", o.moment_jump, "Growth of an optimizer state's L2 norm in one step that makes it explode")->capture_default_str();
  sub.add_option("--json", a->json_path, std::string("Write ") + schemas::kMonitor.id + " JSON to FILE ('-' = stdout)");
  return [a, &global] { return run(*a, global); };
}

}  // namespace parity::cli
