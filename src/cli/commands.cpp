// The subcommand registry: one line per subcommand. Adding a subcommand = src/cli/cmd_<name>.cpp that
// defines `CommandAction setup_<name>(CLI::App&, const GlobalOptions&)`, plus its line here.
#include "cli/command.h"

namespace parity::cli {

CommandAction setup_compare(CLI::App&, const GlobalOptions&);
CommandAction setup_overflow(CLI::App&, const GlobalOptions&);
CommandAction setup_info(CLI::App&, const GlobalOptions&);
CommandAction setup_export(CLI::App&, const GlobalOptions&);
CommandAction setup_report(CLI::App&, const GlobalOptions&);
CommandAction setup_curve(CLI::App&, const GlobalOptions&);
CommandAction setup_ranks(CLI::App&, const GlobalOptions&);
CommandAction setup_monitor(CLI::App&, const GlobalOptions&);
CommandAction setup_eval(CLI::App&, const GlobalOptions&);
CommandAction setup_scan(CLI::App&, const GlobalOptions&);
CommandAction setup_replay(CLI::App&, const GlobalOptions&);

const std::vector<Command>& commands() {
  static const std::vector<Command> all = {
      {"compare", "Compare GOLDEN with TARGET tensor by tensor: metrics, verdicts, table/CSV/JSON", setup_compare,
       UnderMpi::kCooperative},
      {"overflow", "Find where NaN/Inf are born in one run, near-overflow and gradient underflow (loss scale)", setup_overflow,
       UnderMpi::kCooperative},
      {"info", "Show what a capture run holds: ranks, steps, events, bytes, fingerprint, torn tails", setup_info,
       UnderMpi::kCooperative},
      {"export", "Write a capture run's tensors as .npy or .safetensors files for other tools", setup_export},
      {"report", "Write one self-contained HTML report from saved JSON results", setup_report},
      {"curve", "Compare two runs' loss / grad-norm / lr curves: divergence step, spikes, final values", setup_curve},
      {"ranks", "Check that the ranks of one run agree step by step (RANK_INCONSISTENT)", setup_ranks,
       UnderMpi::kCooperative},
      {"monitor", "Watch one run without a golden: loss/grad-norm spikes, update/weight ratios, stagnant bf16 weights, "
                  "exploding moments, NaN/Inf births", setup_monitor},
      {"eval", "Business layer: perplexity/KLD/top-1 (ppl), multiple choice (mc), lm-eval results (lm-eval)", setup_eval},
      {"scan", "Sensitivity scan: which layers can run in bf16/fp16/fp8/int8, and a mixed-precision plan", setup_scan},
      {"replay", "Call each recorded op again on its recorded inputs: error given its inputs (fp64), bit-exact reproduction", setup_replay},
  };
  return all;
}

}  // namespace parity::cli
