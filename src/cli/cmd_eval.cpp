// `parity eval ppl|mc|lm-eval` — the business layer (docs/eval.md). Parses options, calls
// parity::eval, renders.
#include <cstdio>
#include <fstream>

#include "parity/terminal_text.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/html_option.h"
#include "cli/ui.h"
#include "fmt/format.h"
#include "parity/eval.h"
#include "parity/thresholds.h"
#include "parity/schemas.h"

namespace parity::cli {

namespace {

// The options of the three subcommands. Defaults of the comparisons are the library's (its option
// structs, held here and bound to the flags), never restated here.
struct EvalArgs {
  size_t flips = eval::kFlipsListed;  // mc, lm-eval: answer flips listed in the terminal
  // ppl
  std::string golden, target, labels, labels_golden, labels_target;
  int rank = 0;
  eval::PplThresholdOverrides ppl;  // what the user set; the rest is eval::choose_ppl_thresholds'
  // mc
  std::string mc_golden, mc_target;
  // lm-eval
  std::string a, b;
  std::vector<std::string> samples;
  // mc and lm-eval: length normalisation, bootstrap and accuracy thresholds
  eval::McOptions mc;
  std::string json_path, csv_path;
  std::string html_path;  // --html
};

int usage_error(const std::string& m) {
  std::fprintf(stderr, "parity eval: %s\n", terminal_text(m).c_str());
  return kExitUsage;
}

// Prints the text summary unless a machine output goes to stdout; writes the JSON/CSV files.
int finish(const EvalArgs& a, const GlobalOptions& global, Verdict v, const std::string& text, const std::string& json,
           const std::string& csv) {
  if (a.json_path == "-" && a.csv_path == "-") return usage_error("--json - and --csv - cannot both write to stdout");
  const bool machine_on_stdout = a.json_path == "-" || a.csv_path == "-";
  if (!machine_on_stdout) {
    if (global.quiet) {
      size_t last = text.rfind('\n', text.size() - 2);
      std::string tail = text.substr(last == std::string::npos ? 0 : last + 1);
      std::fwrite(tail.data(), 1, tail.size(), stdout);
    } else {
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
  }
  if (!a.json_path.empty()) {
    Status st = write_output(a.json_path, json + "\n");
    if (!st.ok()) return usage_error(st.message());
  }
  if (!a.csv_path.empty()) {
    Status st = write_output(a.csv_path, csv);
    if (!st.ok()) return usage_error(st.message());
  }
  if (!a.html_path.empty() && !write_html_option(a.html_path, json, "eval", global)) return kExitUsage;
  return gate_exit_code(v, WarnGate::kFails);
}

int run_ppl(const EvalArgs& a, const GlobalOptions& global) {
  const std::string lg = a.labels_golden.empty() ? a.labels : a.labels_golden;
  const std::string lt = a.labels_target.empty() ? a.labels : a.labels_target;
  auto g = eval::open_token_source(a.golden, a.rank, lg);
  if (!g.ok()) return usage_error(g.status().message());
  auto t = eval::open_token_source(a.target, a.rank, lt);
  if (!t.ok()) return usage_error(t.status().message());
  eval::PplOptions o;
  o.thresholds = eval::choose_ppl_thresholds(a.ppl, (*g)->source_dtype(), (*t)->source_dtype());
  o.keep_per_token = !a.csv_path.empty();
  auto r = eval::compare_ppl(**g, **t, o);
  if (!r.ok()) return usage_error(r.status().message());
  return finish(a, global, r->verdict, eval::ppl_text(*r, use_color(global), colorize_verdict), eval::ppl_json(*r),
                eval::ppl_tokens_csv(*r));
}

int run_mc(const EvalArgs& a, const GlobalOptions& global) {
  auto r = eval::compare_mc_files(a.mc_golden, a.mc_target, a.mc);
  if (!r.ok()) return usage_error(r.status().message());
  return finish(a, global, r->verdict, eval::mc_text(*r, use_color(global), colorize_verdict, a.flips), eval::mc_json(*r),
                eval::mc_csv(*r));
}

int run_lm_eval(const EvalArgs& a, const GlobalOptions& global) {
  if (a.samples.size() % 2 != 0) return usage_error("--samples takes pairs: A.jsonl B.jsonl");
  std::vector<std::filesystem::path> sa, sb;
  for (size_t i = 0; i < a.samples.size(); i += 2) {
    sa.emplace_back(a.samples[i]);
    sb.emplace_back(a.samples[i + 1]);
  }
  eval::LmEvalOptions o;
  o.mc = a.mc;
  auto r = eval::compare_lm_eval(a.a, a.b, sa, sb, o);
  if (!r.ok()) return usage_error(r.status().message());
  return finish(a, global, r->verdict, eval::lm_eval_text(*r, use_color(global), colorize_verdict, a.flips),
                eval::lm_eval_json(*r), eval::lm_eval_csv(*r));
}

void add_accuracy_options(CLI::App* s, EvalArgs& a) {
  // capture_default_str: the help shows the library's default, the value the struct holds before parsing.
  eval::AccuracyThresholds& th = a.mc.thresholds;
  s->add_option("--pass-points", th.pass_points, "|Δacc| in points that still passes")->capture_default_str();
  s->add_option("--fail-points", th.fail_points, "|Δacc| in points above which it fails (between: warn)")->capture_default_str();
  s->add_option("--alpha", th.alpha, "Significance level for 'distinguishable from zero'")->capture_default_str();
  s->add_option("--bootstrap", a.mc.bootstrap_samples, "Paired bootstrap resamples")->capture_default_str();
  s->add_option("--seed", a.mc.seed, "Bootstrap seed")->capture_default_str();
  s->add_option("--flips", a.flips, "Answer flips to list in the terminal (the count is always shown; the JSON lists all)")
      ->capture_default_str();
}

void add_output_options(CLI::App* s, EvalArgs& a, const char* schema) {
  s->add_option("--json", a.json_path, std::string("Write ") + schema + " JSON to FILE ('-' = stdout)");
  s->add_option("--csv", a.csv_path, "Write the CSV form to FILE ('-' = stdout)");
  add_html_option(*s, a.html_path);
}

}  // namespace

CommandAction setup_eval(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<EvalArgs>();
  sub.require_subcommand(1);
  CLI::App* ppl = sub.add_subcommand("ppl", "Perplexity, KL divergence, Δp and same-top of two runs (llama.cpp definitions)");
  ppl->add_option("golden", a->golden, "Golden: run dir, logits.plg, or logits tensor file")->required();
  ppl->add_option("target", a->target, "Target: run dir, logits.plg, or logits tensor file")->required();
  ppl->add_option("--labels", a->labels, "Labels tensor for logits tensor inputs (both sides)");
  ppl->add_option("--labels-golden", a->labels_golden, "Labels for the golden logits tensor");
  ppl->add_option("--labels-target", a->labels_target, "Labels for the target logits tensor");
  ppl->add_option("--rank", a->rank, "Rank of a run directory")->capture_default_str();
  // Shown as CLI11 shows a captured default ("[0.05]"): the library's PplThresholds default.
  ppl->add_option("--ppl-rel", a->ppl.ppl_rel, "Allowed |PPL ratio − 1| (seed: 5 %)")
      ->default_str(fmt::format("{}", eval::PplThresholds{}.ppl_rel));
  ppl->add_option("--ppl-diff", a->ppl.ppl_diff, "Also check |PPL difference| <= this (seed 004: 0.5; default: off, PPL is judged relatively)");
  ppl->add_option("--kld", a->ppl.kld, "Mean KLD threshold (overrides --kld-dtype)");
  ppl->add_option("--kld-dtype", a->ppl.kld_dtype,
                  fmt::format("KLD threshold of this dtype, compare's kl_pass ({}; default: the less precise of the "
                              "dtypes the two sides' logits were computed in, else bf16)", threshold_default_text("kl_pass")));
  add_output_options(ppl, *a, schemas::kEvalPpl.id);

  CLI::App* mc = sub.add_subcommand("mc", "Multiple-choice accuracy with exact McNemar and paired bootstrap");
  mc->add_option("golden", a->mc_golden, "Golden per-question JSONL (parity.log_choices or lm-eval samples)")->required();
  mc->add_option("target", a->mc_target, "Target per-question JSONL")->required();
  mc->add_flag("--length-norm", a->mc.length_normalised, "Normalise log-likelihoods by choice length (acc_norm)");
  add_accuracy_options(mc, *a);
  add_output_options(mc, *a, schemas::kEvalMc.id);

  CLI::App* lm = sub.add_subcommand("lm-eval", "Compare two lm-evaluation-harness results files task by task");
  lm->add_option("a", a->a, "Golden results JSON, or the lm-eval --output_path directory")->required();
  lm->add_option("b", a->b, "Target results JSON, or the lm-eval --output_path directory")->required();
  lm->add_option("--samples", a->samples, "Per-sample logs, in pairs: A.jsonl B.jsonl (repeat per task; default: the samples_<task>_<timestamp>.jsonl written with each results file)");
  add_accuracy_options(lm, *a);
  add_output_options(lm, *a, schemas::kEvalLmEval.id);

  return [a, &global, ppl, mc, lm]() -> int {
    if (ppl->parsed()) return run_ppl(*a, global);
    if (mc->parsed()) return run_mc(*a, global);
    if (lm->parsed()) return run_lm_eval(*a, global);
    return usage_error("choose one of: ppl, mc, lm-eval");
  };
}

}  // namespace parity::cli
