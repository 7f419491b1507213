// `parity scan --factory FILE.py:FUNC`: which layers of a model can run in a lower precision (docs/scan.md).
// Parse, call, render: the engine is the Python package's parity.sensitivity (it runs the user's model
// under parity.emulate, so it needs torch; python_engine.h says which interpreter runs it). The engine
// prints the terminal table and its progress bar; this command adds --json/--html from its result.
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "parity/terminal_text.h"
#include "cli/command.h"
#include "cli/html_option.h"
#include "cli/output.h"
#include "cli/python_engine.h"
#include "parity/json_number.h"
#include "parity/schemas.h"

namespace parity::cli {
namespace {

// The engine owns the defaults (parity.sensitivity's DEFAULTS and TABLE_ROWS): an option the user did
// not give is not passed, so the engine's default applies.
struct ScanArgs {
  std::string factory, base, state, json_path, html_path;
  std::optional<std::string> lower_to;
  std::vector<std::string> units;
  std::optional<double> budget_kld;
  std::optional<long> limit;
  bool no_plan = false;
};

// The engine's command line: the options the user gave, in the engine's spelling.
std::vector<std::string> engine_args(const ScanArgs& a, const GlobalOptions& global) {
  std::vector<std::string> args = {"--factory", a.factory};
  if (a.lower_to) args.insert(args.end(), {"--lower-to", *a.lower_to});
  if (a.budget_kld) {
    std::ostringstream budget;
    budget.precision(17);  // round-trips the double exactly
    budget << *a.budget_kld;
    args.insert(args.end(), {"--budget-kld", budget.str()});
  }
  if (a.limit) args.insert(args.end(), {"--limit", std::to_string(*a.limit)});
  for (const std::string& u : a.units) args.insert(args.end(), {"--unit", u});
  if (!a.base.empty()) args.insert(args.end(), {"--base", a.base});
  if (!a.state.empty()) args.insert(args.end(), {"--state", a.state});
  if (a.no_plan) args.push_back("--no-plan");
  // With --json - stdout is the JSON alone: the engine prints no table.
  if (global.quiet || a.json_path == "-") args.push_back("--quiet");
  return args;
}

int run_scan(const ScanArgs& a, const GlobalOptions& global) {
  Result<EngineOutput> engine = run_python_engine_json("parity.sensitivity", engine_args(a, global));
  if (!engine.ok()) {
    std::fprintf(stderr, "parity scan: %s\n", terminal_text(engine.status().message()).c_str());
    return kExitUsage;
  }
  const int rc = engine->exit_code;
  // The engine's own status: 0 plan within budget, 1 over budget, 2 bad input (its message is above).
  if (rc != 0 && rc != 1) {
    std::fprintf(stderr, "parity scan: the engine (%s -m parity.sensitivity, chosen by %s) exited with status %d\n",
                 find_python().python.c_str(), find_python().how.c_str(), rc);
    return rc == 2 ? kExitUsage : kExitInternal;
  }
  const nlohmann::json& doc = engine->doc;
  if (doc.is_discarded() || doc.value("schema", "") != schemas::kScan.id) {
    std::fprintf(stderr, "parity scan: the engine wrote no %s result\n", schemas::kScan.id);
    return kExitInternal;
  }
  if (!a.json_path.empty()) {
    Status st = write_output(a.json_path, json_text(doc, 2) + "\n");
    if (!st.ok()) {
      std::fprintf(stderr, "parity scan: %s\n", terminal_text(st.message()).c_str());
      return kExitUsage;
    }
  }
  if (!a.html_path.empty() && !write_html_option(a.html_path, doc, "scan", global)) return kExitUsage;
  return rc == 0 ? kExitOk : kExitDifferences;
}

}  // namespace

CommandAction setup_scan(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<ScanArgs>();
  sub.description(
      "Sensitivity scan: lower one unit (a module path, pattern or op class) at a time to a precision with\n"
      "parity.emulate, measure the model's output against its fp32 self on the factory's batches (token KLD,\n"
      "top-1 agreement, loss delta, each with its standard error), rank the units, then lower greedily, least\n"
      "sensitive first, while the KLD stays within the budget: the plan. FILE.py:FUNC returns (model, batches).\n"
      "Needs a Python with torch: $PARITY_PYTHON, the venv of make build, or python3.\n"
      "Exit: 0 the plan meets the budget; 1 it does not; 2 usage error or a bad factory/policy.");
  sub.add_option("--factory", a->factory, "FILE.py:FUNCTION returning (model, batches)")->required();
  // The defaults these texts state are parity.sensitivity's; tests/python/test_scan_defaults.py checks them.
  sub.add_option("--lower-to", a->lower_to, "Mode each unit is lowered to: bf16, fp16, fp8_e4m3, fp8_e5m2, int8, "
                                            "int8:channel, tf32, ... (docs/emulation.md; default bf16)");
  sub.add_option("--unit", a->units, "A unit to scan (module path, fnmatch pattern or op class); repeatable; "
                                     "default: every unit the mode acts on");
  sub.add_option("--base", a->base, "A JSON policy applied in every run, e.g. '{\"*.norm\": \"fp32\"}'");
  sub.add_option("--budget-kld", a->budget_kld, "KLD budget of the plan (mean per token; default 0.01)");
  sub.add_flag("--no-plan", a->no_plan, "Rank only; skip the greedy plan");
  sub.add_option("--state", a->state, "JSONL file each result is appended to; a rerun skips what it holds");
  sub.add_option("--limit", a->limit, "Rows shown (default 20; 0 = all)");
  sub.add_option("--json", a->json_path, std::string("Write the result as JSON (schema ") + schemas::kScan.id + ", " + schemas::kScan.doc + "); '-' = stdout");
  add_html_option(sub, a->html_path);
  return [a, &global] { return run_scan(*a, global); };
}

}  // namespace parity::cli
