// Terminal sections of the findings: configuration differences (printed before everything else), then
// first divergence, top suspects and diagnoses; and the `parity overflow` report.
#include <algorithm>
#include <cmath>
#include <string>

#include "parity/terminal_text.h"
#include "fmt/format.h"
#include "parity/diagnosis.h"

namespace parity {
namespace {

std::string sgr(const std::string& s, const char* code, bool color) {
  return color ? fmt::format("\x1b[{}m{}\x1b[0m", code, s) : s;
}
std::string bold(const std::string& s, bool c) { return sgr(s, "1", c); }
std::string red(const std::string& s, bool c) { return sgr(s, "31", c); }
std::string yellow(const std::string& s, bool c) { return sgr(s, "33", c); }
std::string green(const std::string& s, bool c) { return sgr(s, "32", c); }

std::string units(double r) {
  if (std::isnan(r)) return "n/a";
  if (std::isinf(r)) return "non-finite";
  if (r >= 100) return fmt::format("{:.0f} u", r);
  return fmt::format("{:.3g} u", r);
}

std::string where(int64_t step, int rank) {
  if (step < 0 && rank < 0) return "";
  return fmt::format(" (step {}, rank {})", step, rank);
}

}  // namespace

void print_config_diff(std::FILE* out, const std::vector<ConfigDifference>& diffs, bool color) {
  if (diffs.empty()) return;
  std::fprintf(out, "%s\n", bold("Configuration differences", color).c_str());
  for (const ConfigDifference& d : diffs) {
    const std::string tag = d.numeric ? yellow("[" + d.category + "]", color) : "[" + d.category + "]";
    std::fprintf(out, "  %s %s: %s → %s\n", tag.c_str(), d.key.c_str(), d.golden.c_str(), d.target.c_str());
  }
  std::fputc('\n', out);
}

void print_findings(std::FILE* out, const Findings& f, const CompareResult& result, bool color, size_t max_suspects) {
  const Analysis& a = f.analysis;
  std::fprintf(out, "%s %lld noise, %lld elevated, %lld structural%s\n", bold("Noise model:", color).c_str(),
               static_cast<long long>(a.rows_noise), static_cast<long long>(a.rows_elevated),
               static_cast<long long>(a.rows_structural),
               a.statistics_only ? " (statistics only: weaker evidence)" : "");
  if (a.first_divergence) {
    const FirstDivergence& d = *a.first_divergence;
    std::fprintf(out, "%s %s%s — %s, %s (%s)\n", bold("First divergence:", color).c_str(), terminal_text(d.name).c_str(),
                 where(d.step, d.rank).c_str(), red(verdict_name(d.verdict), color).c_str(), terminal_text(d.reason).c_str(),
                 units(d.noise_ratio).c_str());
  } else {
    std::fprintf(out, "%s none (no row fails)\n", bold("First divergence:", color).c_str());
  }
  if (f.timeline) print_timeline(out, *f.timeline, color);
  if (!a.suspects.empty()) {
    std::fprintf(out, "%s (ranked by error created, in units of expected rounding u)\n", bold("Suspects", color).c_str());
    for (size_t i = 0; i < a.suspects.size() && i < max_suspects; ++i) {
      const Suspect& s = a.suspects[i];
      std::fprintf(out, "  %zu. %s [%s%s]%s: %s%s\n", i + 1, bold(terminal_text(s.name), color).c_str(), suspect_kind_name(s.kind),
                   s.op.empty() ? "" : (", " + terminal_text(s.op)).c_str(), where(s.step, s.rank).c_str(), terminal_text(s.why).c_str(),
                   !s.weak_evidence                      ? ""
                   : a.events[s.event].aligned_only      ? " (weak: paired by order alignment only)"
                                                         : " (weak: statistics only)");
      if (!s.replay_status.empty()) {  // parity compare --replay (docs/replay.md)
        const std::string st = s.replay_status == "confirmed" ? red("confirmed by replay", color)
                               : s.replay_status == "refuted" ? green("refuted by replay", color)
                                                              : yellow("replay " + s.replay_status, color);
        std::fprintf(out, "       %s: %s\n", st.c_str(), terminal_text(s.replay_evidence).c_str());
      }
    }
  } else if (a.has_events) {
    std::fprintf(out, "%s none: no event creates more error than it receives (beyond rounding)\n", bold("Suspects:", color).c_str());
    // A run whose rows warn above rounding noise still says where (issue 28 §7): no event creates that
    // error from inputs within noise, so it is accumulated over the ops before its worst row.
    const CompareRow* worst_warning = nullptr;
    for (const CompareRow& row : result.rows)
      if (row.verdict == Verdict::kWarn && row.noise == NoiseClass::kElevated &&
          (!worst_warning || row.noise_ratio > worst_warning->noise_ratio))
        worst_warning = &row;
    if (worst_warning)
      std::fprintf(out, "  elevated rows warn, worst %s%s (%s): accumulated over the ops before it, no one op "
                        "creates it\n",
                   terminal_text(worst_warning->golden->name).c_str(),
                   where(worst_warning->golden->step, worst_warning->golden->rank).c_str(),
                   units(worst_warning->noise_ratio).c_str());
  }
  const size_t mapped = static_cast<size_t>(std::count_if(result.rows.begin(), result.rows.end(),
                                                          [](const CompareRow& r) { return r.match != MatchKind::kExact; }));
  if (mapped > 0) std::fprintf(out, "%s %zu pairs matched by --map or alignment (see JSON \"alignment\")\n",
                               bold("Alignment:", color).c_str(), mapped);
  if (!f.diagnoses.empty()) {
    std::fprintf(out, "%s\n", bold("Diagnosis", color).c_str());
    for (const Diagnosis& d : f.diagnoses) {
      const std::string code = d.strength >= 3 ? red(d.code, color) : d.strength == 0 ? green(d.code, color) : yellow(d.code, color);
      // The verdict line says FAILED because of it: the diagnosis says so where it is read.
      const std::string fails = d.severity == Severity::kFail ? " " + red("[fails the run]", color) : "";
      std::fprintf(out, "  %s — %s%s\n", code.c_str(), d.title.c_str(), fails.c_str());
      for (size_t i = 0; i < d.evidence.size() && i < 6; ++i) std::fprintf(out, "      · %s\n", terminal_text(d.evidence[i]).c_str());
      std::string advice = d.advice;
      size_t pos = 0;
      while ((pos = advice.find('\n', pos)) != std::string::npos) advice.replace(pos, 1, "\n        "), pos += 9;
      std::fprintf(out, "      → %s\n", advice.c_str());
    }
  }
}

void print_overflow_verdict(std::FILE* out, const OverflowReport& r) {
  std::fprintf(out, "overflow: %s | %zu NaN/Inf origin(s), gradient overflow %s, underflow %s, %zu problem(s)\n",
               overflow_verdict(r) == Verdict::kPass ? "none" : "FOUND", r.origins.size(), r.grads_overflow ? "yes" : "no",
               r.grads_underflow ? "yes" : "no", r.problems.size());
}

void print_overflow(std::FILE* out, const OverflowReport& r, bool color) {
  std::fprintf(out, "%s %s: %lld records, %lld measured, %lld with NaN/Inf\n", bold("Overflow", color).c_str(),
               terminal_text(r.source).c_str(), static_cast<long long>(r.records), static_cast<long long>(r.measured),
               static_cast<long long>(r.nonfinite_records));
  if (r.origins.empty()) std::fprintf(out, "  %s\n", green("no NaN/Inf born in any step", color).c_str());
  for (const NanOrigin& o : r.origins) {
    std::fprintf(out, "  %s %s [%s, %s]%s\n", red("NaN/Inf born at", color).c_str(), bold(terminal_text(o.event), color).c_str(),
                 terminal_text(o.op).c_str(), o.direction.c_str(), where(o.step, o.rank).c_str());
    for (const ValueRange& v : o.inputs)
      std::fprintf(out, "      input  %s %s: min %.4g max %.4g\n", terminal_text(v.name).c_str(), dtype_name(v.dtype), v.min, v.max);
    for (const ValueRange& v : o.outputs)
      std::fprintf(out, "      output %s %s: %lld NaN, %lld Inf\n", terminal_text(v.name).c_str(), dtype_name(v.dtype),
                   static_cast<long long>(v.nan_count), static_cast<long long>(v.inf_count));
    std::fprintf(out, "      why: %s\n", terminal_text(o.explanation).c_str());
    std::fprintf(out, "      %lld later events contaminated\n", static_cast<long long>(o.contaminated));
  }
  for (size_t i = 0; i < r.near_overflow.size() && i < 10; ++i) {
    const NearOverflow& n = r.near_overflow[i];
    std::fprintf(out, "  %s %s %s |x| max %.6g > %.6g%s\n", yellow("near overflow:", color).c_str(), terminal_text(n.name).c_str(),
                 dtype_name(n.dtype), n.absmax, n.limit, where(n.step, n.rank).c_str());
  }
  if (r.near_overflow.size() > 10) std::fprintf(out, "  ... and %zu more near-overflow tensors\n", r.near_overflow.size() - 10);
  size_t shown = 0;
  for (const GradUnderflow& g : r.grad_underflow) {  // the underflowing ones; the others were only measured
    if (!g.underflowing || shown++ >= 10) continue;
    std::fprintf(out, "  gradient %s %s: %.1f %% zero, %.1f %% subnormal%s\n", terminal_text(g.name).c_str(), dtype_name(g.dtype),
                 100 * g.zero_fraction, 100 * g.subnormal_fraction, where(g.step, g.rank).c_str());
  }
  if (r.loss_scale_advice == "lower")
    std::fprintf(out, "  %s gradients overflow: lower the loss scale (or use dynamic loss scaling)\n", red("loss scale:", color).c_str());
  else if (r.loss_scale_advice == "raise")
    std::fprintf(out, "  %s gradients underflow: raise the loss scale (or use dynamic loss scaling)\n", yellow("loss scale:", color).c_str());
  for (const Status& st : r.problems) std::fprintf(out, "  problem: %s\n", terminal_text(st.message()).c_str());
}

}  // namespace parity

namespace parity {

void print_timeline(std::FILE* out, const DivergenceTimeline& t, bool color) {
  const std::string head = bold("Divergence timeline:", color);
  const std::string range = fmt::format("steps {}–{}, bound {:g} u·√(steps since {})", t.steps.front(),
                                        t.steps.back(), t.per_step_limit, t.steps.front());
  if (!t.first) {
    std::fprintf(out, "%s %s — no tensor grows beyond accumulated rounding (median growth exponent %s)\n",
                 head.c_str(), green("none", color).c_str(),
                 std::isnan(t.median_growth) ? "n/a" : fmt::format("{:.2f}", t.median_growth).c_str());
    std::fprintf(out, "  (%s)\n", range.c_str());
    return;
  }
  const TimelineCrossing& c = *t.first;
  std::fprintf(out, "%s first crossing at %s: %s [%s]%s, %s > %s (%s)\n", head.c_str(),
               red(fmt::format("step {}", c.step), color).c_str(), terminal_text(c.name).c_str(), c.phase.c_str(),
               c.rank > 0 ? fmt::format(" rank {}", c.rank).c_str() : "", units(c.ratio).c_str(), units(c.bound).c_str(),
               range.c_str());
  std::string keys;
  for (const std::string& k : t.config_keys) keys += (keys.empty() ? "; configuration: " : ", ") + k;
  std::fprintf(out, "  cause: %s — %s%s\n", yellow(t.cause, color).c_str(), terminal_text(t.cause_text).c_str(),
               terminal_text(keys).c_str());
  std::string phases;
  for (const TimelineCrossing& p : t.phase_first)
    phases += fmt::format("{}{} {}", phases.empty() ? "" : ", ", p.phase, p.step);
  std::fprintf(out, "  first crossing per phase: %s\n", phases.c_str());
}

}  // namespace parity
