// src/eval/render.cpp — terminal summaries of the eval comparisons. The PPL/KLD block follows
// llama.cpp's "Perplexity statistics" / "KL divergence statistics" layout so numbers can be read side
// by side with it.
#include <cmath>

#include <fmt/format.h>

#include "parity/eval.h"
#include "parity/terminal_text.h"

namespace parity::eval {

namespace {

std::string word(Verdict v, bool color, VerdictColorizer colorize) {
  std::string w = verdict_name(v);
  for (char& c : w) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return colorize ? colorize(w, v, color) : w;
}

std::string pts(double frac) { return std::isnan(frac) ? "n/a" : fmt::format("{:+.2f}", frac * 100); }

}  // namespace

std::string ppl_text(const PplResult& r, bool color, VerdictColorizer colorize) {
  std::string o;
  auto line = [&](std::string s) { o += s + "\n"; };
  line(fmt::format("golden: {}", terminal_text(r.golden_source)));
  line(fmt::format("target: {}", terminal_text(r.target_source)));
  line(fmt::format("tokens: {}", r.tokens));
  line("");
  line("====== Perplexity statistics ======");
  line(fmt::format("Mean PPL(target)                : {:10.6f} ± {:10.6f}", r.ppl_target.value, r.ppl_target.unc));
  line(fmt::format("Mean PPL(golden)                : {:10.6f} ± {:10.6f}", r.ppl_golden.value, r.ppl_golden.unc));
  line(fmt::format("Cor(ln(PPL(target)), ln(PPL(g))): {:6.2f}%", 100.0 * r.ln_ppl_correlation));
  line(fmt::format("Mean ln(PPL(target)/PPL(golden)): {:10.6f} ± {:10.6f}", r.ln_ppl_ratio.value, r.ln_ppl_ratio.unc));
  line(fmt::format("Mean PPL(target)/PPL(golden)    : {:10.6f} ± {:10.6f}", r.ppl_ratio.value, r.ppl_ratio.unc));
  line(fmt::format("Mean PPL(target)-PPL(golden)    : {:10.6f} ± {:10.6f}", r.ppl_diff.value, r.ppl_diff.unc));
  line("");
  line("====== KL divergence statistics ======");
  line(fmt::format("Mean    KLD: {:10.6f} ± {:10.6f}   (representation error ≤ {:.2g} mean, {:.2g} max)",
                   r.kld.value, r.kld.unc, r.kld_bound_mean, r.kld_bound_max));
  const Percentiles& k = r.kld_pct;
  line(fmt::format("Maximum KLD: {:10.6f}", k.max));
  line(fmt::format("99.9%   KLD: {:10.6f}", k.p99_9));
  line(fmt::format("99.0%   KLD: {:10.6f}", k.p99));
  line(fmt::format("95.0%   KLD: {:10.6f}", k.p95));
  line(fmt::format("90.0%   KLD: {:10.6f}", k.p90));
  line(fmt::format("Median  KLD: {:10.6f}", k.median));
  line(fmt::format("10.0%   KLD: {:10.6f}", k.p10));
  line(fmt::format(" 5.0%   KLD: {:10.6f}", k.p5));
  line(fmt::format(" 1.0%   KLD: {:10.6f}", k.p1));
  line(fmt::format(" 0.1%   KLD: {:10.6f}", k.p0_1));
  line(fmt::format("Minimum KLD: {:10.6f}", k.min));
  line("");
  line("====== Token probability statistics ======");
  const Percentiles& d = r.delta_p_pct;
  line(fmt::format("Mean    Δp: {:6.3f} ± {:5.3f} %", 100 * r.delta_p.value, 100 * r.delta_p.unc));
  line(fmt::format("Maximum Δp: {:6.3f}%   99.9%: {:6.3f}%   99%: {:6.3f}%   95%: {:6.3f}%", 100 * d.max, 100 * d.p99_9,
                   100 * d.p99, 100 * d.p95));
  line(fmt::format("90.0%   Δp: {:6.3f}%   75%: {:6.3f}%   Median: {:6.3f}%   25%: {:6.3f}%", 100 * d.p90, 100 * d.p75,
                   100 * d.median, 100 * d.p25));
  line(fmt::format("10.0%   Δp: {:6.3f}%   5%: {:6.3f}%   1%: {:6.3f}%   0.1%: {:6.3f}%   Minimum: {:6.3f}%",
                   100 * d.p10, 100 * d.p5, 100 * d.p1, 100 * d.p0_1, 100 * d.min));
  line(fmt::format("RMS Δp    : {:6.3f} ± {:5.3f} %", 100 * r.delta_p_rms.value, 100 * r.delta_p_rms.unc));
  line(fmt::format("Same top p: {:6.3f} ± {:5.3f} %", 100 * r.same_top.value, 100 * r.same_top.unc));
  line("");
  line(fmt::format("KLD limit {:g} for {} logits: {} (override: --kld-dtype or --kld)", r.thresholds.kld,
                   r.thresholds.kld_dtype, terminal_text(r.thresholds.kld_source)));
  for (const Check& c : r.checks)
    line(fmt::format("check {:<9} {:.6g} {} {:.6g}  {}", c.name, c.value, c.pass ? "within" : "outside", c.limit,
                     word(c.pass ? Verdict::kPass : Verdict::kFail, color, colorize)));
  for (const auto& n : r.notes) line("note: " + n);
  for (const auto& p : r.problems) line("problem: " + terminal_text(p.message()));
  line(fmt::format("eval ppl: {}", word(r.verdict, color, colorize)));
  return o;
}

// "answer flips: N" and the first `max_flips`: id, the two answers, the correct one and whose was right.
// flip_correct_name with the sides as the output names them ("A"/"B" for lm-eval).
static std::string correct_side(const AnswerFlip& f, const char* golden, const char* target) {
  const std::string c = flip_correct_name(f);
  return c == "golden" ? golden : c == "target" ? target : c;
}

static std::string flips_text(const std::vector<AnswerFlip>& flips, size_t max_flips, const char* golden,
                       const char* target) {
  std::string o;
  for (size_t i = 0; i < flips.size() && i < max_flips; ++i) {
    const AnswerFlip& f = flips[i];
    o += fmt::format("  {:<16} {} {:<12} {} {:<12} answer {:<12} correct: {}\n", terminal_text(f.id).substr(0, 16),
                     golden, terminal_text(f.golden).substr(0, 12), target, terminal_text(f.target).substr(0, 12),
                     terminal_text(f.answer).substr(0, 12), correct_side(f, golden, target));
  }
  if (flips.size() > max_flips) o += fmt::format("  ... {} more (--flips N lists more; the JSON has all)\n", flips.size() - max_flips);
  return o;
}

std::string mc_text(const McResult& r, bool color, VerdictColorizer colorize, size_t max_flips) {
  std::string o;
  auto row = [&](const PairedAccuracy& a, const std::string& name) {
    o += fmt::format("{:<24} {:>6}  {:6.2f}  {:6.2f}  {:>6}  {:>3}/{:<3}  {:8.4f}  [{:+.2f}, {:+.2f}]  {}\n",
                     terminal_text(name).substr(0, 24), a.questions, 100 * a.golden_acc, 100 * a.target_acc, pts(a.diff),
                     a.mcnemar.only_golden, a.mcnemar.only_target, a.mcnemar.p_value, 100 * a.bootstrap.low,
                     100 * a.bootstrap.high, word(a.verdict, color, colorize));
  };
  o += fmt::format("golden: {}\ntarget: {}\nchoice: argmax log-likelihood{}\n\n", terminal_text(r.golden_source),
                   terminal_text(r.target_source),
                   r.length_normalised ? " / length" : "");
  o += fmt::format("{:<24} {:>6}  {:>6}  {:>6}  {:>6}  {:>7}  {:>8}  {:<18}  {}\n", "group", "n", "golden", "target",
                   "Δ pts", "b/c", "McNemar", "bootstrap 95% CI", "verdict");
  for (const auto& s : r.subjects) row(s, s.group);
  row(r.overall, "overall");
  o += fmt::format("\nthe difference is {}statistically distinguishable from zero (McNemar p = {:.4g}, α = {})\n",
                   r.overall.distinguishable ? "" : "not ", r.overall.mcnemar.p_value, r.thresholds.alpha);
  o += fmt::format("answer flips: {} question(s) where the runs chose differently\n", r.flips.size());
  o += flips_text(r.flips, max_flips, "golden", "target");
  if (!r.unmatched.empty()) o += fmt::format("{} question(s) present on one side only\n", r.unmatched.size());
  for (const auto& p : r.problems) o += "problem: " + terminal_text(p.message()) + "\n";
  o += fmt::format("eval mc: {}\n", word(r.verdict, color, colorize));
  return o;
}

std::string lm_eval_text(const LmEvalResult& r, bool color, VerdictColorizer colorize, size_t max_flips) {
  std::string o;
  o += fmt::format("A: {}\nB: {}\n", terminal_text(r.a_source), terminal_text(r.b_source));
  for (const auto& s : r.samples)
    o += fmt::format("samples {}: {} | {}\n", terminal_text(s.task), terminal_text(s.a), terminal_text(s.b));
  o += "\n";
  o += fmt::format("{:<20} {:<26} {:>7} {:>7} {:>7} {:>8} {:>9}  {}\n", "task", "metric,filter", "A", "B", "Δ pts", "z-test p",
                   "paired p", "verdict");
  for (const auto& m : r.metrics)
    o += fmt::format("{:<20} {:<26} {:7.2f} {:7.2f} {:>7} {:8.4f} {:>9}  {}{}\n", terminal_text(m.task).substr(0, 20),
                     terminal_text(m.metric + (m.filter.empty() || m.filter == "none" ? "" : "," + m.filter)).substr(0, 26),
                     100 * m.a, 100 * m.b, pts(m.diff), m.p_value,
                     m.paired ? fmt::format("{:.4f}", m.paired->mcnemar.p_value) : std::string("-"),
                     word(m.verdict, color, colorize), m.distinguishable ? "  (distinguishable)" : "");
  for (const auto& m : r.metrics) {
    if (!m.flips_listed) continue;
    o += fmt::format("answer flips {} {}: {} doc(s) where A and B answered differently\n", terminal_text(m.task),
                     terminal_text(m.metric + (m.filter.empty() || m.filter == "none" ? "" : "," + m.filter)),
                     m.flips.size());
    o += flips_text(m.flips, max_flips, "A", "B");
  }
  if (!r.only_a.empty()) o += fmt::format("only in A: {}\n", terminal_text(fmt::format("{}", fmt::join(r.only_a, ", "))));
  if (!r.only_b.empty()) o += fmt::format("only in B: {}\n", terminal_text(fmt::format("{}", fmt::join(r.only_b, ", "))));
  for (const auto& p : r.problems) o += "problem: " + terminal_text(p.message()) + "\n";
  o += fmt::format("eval lm-eval: {}\n", word(r.verdict, color, colorize));
  return o;
}

}  // namespace parity::eval
