// `parity replay RUN`: call every recorded op of a tensor-mode capture again on its recorded inputs, in
// float64 (the exact reference) and in the recorded dtype; report each op's error given its own inputs
// in units of its dtype's rounding, whether the recorded output is reproduced bit for bit, and why an
// event could not be replayed (docs/replay.md). Parse, call, render: the engine is the Python package's
// parity.replay (it needs torch; python_engine.h says which interpreter runs it).
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "parity/terminal_text.h"
#include "cli/command.h"
#include "cli/html_option.h"
#include "cli/output.h"
#include "cli/python_engine.h"
#include "cli/ui.h"
#include "fmt/format.h"
#include "parity/json_number.h"
#include "parity/replay_report.h"
#include "parity/schemas.h"

namespace parity::cli {
namespace {

// Options left empty (0) are not passed: the engine's defaults apply (python/parity/replay/cli.py; the help
// texts that state them are checked by tests/python/test_engine_defaults.py). `limit` is this command's own.
struct ReplayArgs {
  std::string run, suspects, emulate, device, json_path, html_path;
  std::vector<std::string> events, modules;
  long limit = 30;  // rows of the terminal table (print_replay)
  long max_events = 0;
  bool all = false;
};

int run_replay(const ReplayArgs& a, const GlobalOptions& global) {
  std::vector<std::string> args = {"run", a.run};
  for (const std::string& e : a.events) args.insert(args.end(), {"--event", e});
  for (const std::string& m : a.modules) args.insert(args.end(), {"--module", m});
  if (!a.suspects.empty()) args.insert(args.end(), {"--suspects", a.suspects});
  if (!a.emulate.empty()) args.insert(args.end(), {"--emulate", a.emulate});
  if (!a.device.empty()) args.insert(args.end(), {"--device", a.device});
  if (a.max_events > 0) args.insert(args.end(), {"--limit", std::to_string(a.max_events)});
  if (global.quiet) args.push_back("--no-progress");
  Result<EngineOutput> engine = run_python_engine_json("parity.replay", args);
  if (!engine.ok()) {
    std::fprintf(stderr, "parity replay: %s\n", terminal_text(engine.status().message()).c_str());
    return kExitUsage;
  }
  const int rc = engine->exit_code;
  if (rc != 0) {
    // 2: the engine named a bad input; anything else: it could not run (no torch/numpy in that Python, ...).
    std::fprintf(stderr, "parity replay: the engine (%s -m parity.replay, chosen by %s) exited with status %d%s\n",
                 find_python().python.c_str(), find_python().how.c_str(), rc,
                 rc == 2 ? "" : "; set PARITY_PYTHON to a Python with torch and numpy (docs/replay.md)");
    return kExitUsage;
  }
  const nlohmann::json& doc = engine->doc;
  if (doc.is_discarded() || !doc.contains("summary")) {
    std::fprintf(stderr, "parity replay: the engine wrote no %s result\n", schemas::kReplay.id);
    return kExitInternal;
  }
  const bool json_stdout = a.json_path == "-";
  if (!a.json_path.empty()) {
    Status st = write_output(a.json_path, json_text(doc, 2) + "\n");
    if (!st.ok()) {
      std::fprintf(stderr, "parity replay: %s\n", terminal_text(st.message()).c_str());
      return kExitUsage;
    }
  }
  if (!a.html_path.empty() && !write_html_option(a.html_path, doc, "replay", global)) return kExitUsage;
  std::FILE* human = json_stdout ? stderr : stdout;
  if (!global.quiet) report::print_replay(human, doc, a.all ? 0 : a.limit, a.all, use_color(global, json_stdout ? 2 : 1));
  const report::ReplayOutcome outcome = report::replay_outcome(doc["summary"]);
  report::print_replay_verdict(human, doc, outcome);
  return gate_exit_code(outcome.verdict, WarnGate::kFails, outcome.nothing);
}

}  // namespace

CommandAction setup_replay(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<ReplayArgs>();
  sub.description(
      "Call every recorded op of RUN (a tensor-mode capture at level op or mix) again on its recorded inputs:\n"
      "in float64 (the exact reference) and in the recorded dtype. Reports each op's error given its own\n"
      "inputs in units of its dtype's rounding u (above 32 u it creates error; within rounding it only\n"
      "carries its inputs' error), whether the recorded output is reproduced bit for bit, and why an event\n"
      "cannot be replayed. Needs a Python with torch: $PARITY_PYTHON, the venv of make build, or python3.\n"
      "Exit: 0 every selected op replayed, reproduced and within rounding; 1 an op creates error, is not\n"
      "reproduced or could not be replayed; 2 usage error or nothing to replay.");
  sub.add_option("RUN", a->run, "Capture run (parity.capture, mode='tensor', level 'op' or 'mix')")->required();
  sub.add_option("--event", a->events, "Only this event (an op event name or one of its record names); repeatable");
  sub.add_option("--module", a->modules, "Only op events inside this module path prefix; repeatable");
  sub.add_option("--suspects", a->suspects, "Only the ops of the suspects of this parity compare --json result");
  sub.add_option("--emulate", a->emulate, "Also run each op on inputs held in this precision: bf16, f16 (torch casts), fp8_e4m3, fp8_e5m2, int8, int8:channel, tf32, ftz (parity.emulation)");
  sub.add_option("--device", a->device, "Where the recorded-dtype replay runs: auto (default: each op on the device it was recorded on when this torch has it, else the host), cpu, or a device such as cuda:0; the float64 reference always runs on the host");
  sub.add_option("--max-events", a->max_events, "Replay at most this many events (default: all)")->check(CLI::NonNegativeNumber);
  sub.add_option("--limit", a->limit, fmt::format("Rows shown (default {}; 0 = all)", ReplayArgs{}.limit));
  sub.add_flag("--all", a->all, "Show every replayed event, not only those that differ");
  sub.add_option("--json", a->json_path, std::string("Write the result as JSON (schema ") + schemas::kReplay.id + ", " + schemas::kReplay.doc + "); '-' = stdout");
  add_html_option(sub, a->html_path);
  return [a, &global] { return run_replay(*a, global); };
}

}  // namespace parity::cli
