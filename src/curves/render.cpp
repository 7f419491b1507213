// src/curves/render.cpp — compact terminal summaries of curve and rank comparisons with Unicode
// sparklines (the HTML report draws the same JSON properly).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "parity/curves.h"
#include "parity/terminal_text.h"
#include "parity/number_text.h"

namespace parity::curves {

namespace {

std::string upper(const char* s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

std::string verdict_word(Verdict v, bool color, VerdictColorizer colorize) {
  std::string w = upper(verdict_name(v));
  return colorize ? colorize(w, v, color) : w;
}

std::string pct(double v) {
  if (std::isnan(v)) return std::string(kNoValueText);
  if (std::isinf(v)) return "inf";
  return fmt::format("{:.3g} %", v * 100);
}

std::string g6(double v) { return std::isnan(v) ? std::string(kNoValueText) : fmt::format("{:.6g}", v); }

// Cut to `width` display columns (every character here is one column wide).
std::string fit(const std::string& s, int width) {
  int cols = 0;
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    if (c == 0x1b) {  // ANSI escape: zero width, through 'm'
      size_t m = s.find('m', i);
      i = m == std::string::npos ? s.size() : m + 1;
      continue;
    }
    if (cols == width) return s.substr(0, i) + (s.find('\033', i) != std::string::npos ? "\033[0m" : "");
    ++cols;
    i += len;
  }
  return s;
}

// Word-wrap plain text to `width` columns; continuation lines get `indent` spaces.
std::string wrap(const std::string& text, int width, int indent) {
  std::string out, line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(pos, end - pos);
    if (!line.empty() && static_cast<int>(line.size() + 1 + word.size()) > width) {
      out += line + "\n";
      line = std::string(indent, ' ') + word;
    } else {
      line += (line.empty() ? "" : " ") + word;
    }
    pos = end + 1;
  }
  return out + line + "\n";
}

// Metric names of one side, for the "only in" lines (names come from other people's files).
std::vector<std::string> escaped(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names) out.push_back(terminal_text(n));
  return out;
}

}  // namespace

std::string sparkline(const std::vector<double>& values, int columns, double lo, double hi) {
  static const char* const blocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  const size_t n = values.size();
  if (n == 0 || columns <= 0) return "";
  const size_t cells = std::min<size_t>(n, static_cast<size_t>(columns));
  std::string out;
  for (size_t c = 0; c < cells; ++c) {
    // Each cell shows the mean of its points; a non-finite point marks the whole cell.
    size_t a = c * n / cells, b = (c + 1) * n / cells;
    double sum = 0;
    bool bad = false;
    for (size_t i = a; i < b; ++i) {
      if (!std::isfinite(values[i])) bad = true;
      else sum += values[i];
    }
    if (bad) { out += "×"; continue; }
    double v = sum / (b - a);
    int level = hi > lo ? static_cast<int>(std::lround((v - lo) / (hi - lo) * 7)) : 0;
    out += blocks[std::clamp(level, 0, 7)];
  }
  return out;
}

std::string curve_comparison_text(const CurveComparison& c, int width, bool color, VerdictColorizer colorize,
                                  bool verbose) {
  width = std::clamp(width, 40, 100);
  std::string out;
  auto line = [&](const std::string& s) { out += fit(s, width) + "\n"; };
  line(fmt::format("golden: {} ({})", terminal_text(c.golden_path), c.golden_format));
  line(fmt::format("target: {} ({})", terminal_text(c.target_path), c.target_format));
  const int spark = std::max(10, width - 34);
  bool blank = true;
  for (const MetricComparison& m : c.metrics) {
    // Passing side metrics get one line; the loss, anything not passing, and --verbose get the block.
    const bool full = verbose || m.verdict != Verdict::kPass || m.metric == "loss" || c.metrics.size() <= 2;
    if (full || blank) out += "\n";
    blank = full;
    line(fmt::format("{} {}  {} aligned step(s)  mean rel dev {}  max {}{}", terminal_text(m.metric),
                     verdict_word(m.verdict, color, colorize), m.points.size(), pct(m.mean_rel_dev),
                     pct(m.max_rel_dev),
                     m.max_rel_dev_step >= 0 ? fmt::format(" @{}", m.max_rel_dev_step) : std::string()));
    if (!full) continue;
    std::vector<double> g, t, d;
    double lo = INFINITY, hi = -INFINITY, dmax = m.tolerance.rel_tol;
    for (const AlignedPoint& p : m.points) {
      g.push_back(p.golden);
      t.push_back(p.target);
      d.push_back(p.rel_dev);
      for (double v : {p.golden, p.target})
        if (std::isfinite(v)) { lo = std::min(lo, v); hi = std::max(hi, v); }
      if (std::isfinite(p.rel_dev)) dmax = std::max(dmax, p.rel_dev);
    }
    auto ends = [](const std::vector<double>& v) {
      return v.empty() ? std::string() : fmt::format("{} → {}", g6(v.front()), g6(v.back()));
    };
    line(fmt::format("  golden  {}  {}", sparkline(g, spark, lo, hi), ends(g)));
    line(fmt::format("  target  {}  {}", sparkline(t, spark, lo, hi), ends(t)));
    line(fmt::format("  rel dev {}  0..{}", sparkline(d, spark, 0, dmax), pct(dmax)));
    line(fmt::format("  final {} vs {} ({}, mean of {})  best {} @{} vs {} @{}  divergence {}", g6(m.final_target),
                     g6(m.final_golden), pct(m.final_rel_diff), m.final_window, g6(m.best_target), m.best_target_step,
                     g6(m.best_golden), m.best_golden_step,
                     m.divergence_step ? fmt::format("@{}", *m.divergence_step) : std::string("none")));
    if (!m.spikes_target.empty() || !m.spikes_golden.empty() || !m.nonfinite_target.empty() ||
        !m.nonfinite_golden.empty())
      line(fmt::format("  spikes golden {} target {}  NaN/Inf golden {} target {}", m.spikes_golden.size(),
                       m.spikes_target.size(), m.nonfinite_golden.size(), m.nonfinite_target.size()));
    for (const std::string& r : m.reasons) {
      std::string w = wrap("- " + terminal_text(r), width - 2, 2);
      for (size_t a = 0, b; a < w.size(); a = b + 1) {
        b = w.find('\n', a);
        out += "  " + w.substr(a, b - a) + "\n";
      }
    }
    if (verbose)
      for (const Window& w : m.windows)
        line(fmt::format("    steps {}..{}: mean rel dev {}, max {}", w.first_step, w.last_step, pct(w.mean_rel_dev),
                         pct(w.max_rel_dev)));
  }
  if (!c.only_golden.empty()) line(fmt::format("\nonly in golden: {}", fmt::join(escaped(c.only_golden), ", ")));
  if (!c.only_target.empty()) line(fmt::format("only in target: {}", fmt::join(escaped(c.only_target), ", ")));
  if (!c.counters_skipped.empty())
    line(fmt::format("counters not compared: {} (--counters compares them)", fmt::join(escaped(c.counters_skipped), ", ")));
  // Problems and notes are printed whole: cut to the terminal's width they lost the record and the reason.
  for (const Status& p : c.problems) out += "problem: " + terminal_text(p.message()) + "\n";
  for (const std::string& n : c.notes) out += "note: " + terminal_text(n) + "\n";
  out += "\n";
  line(fmt::format("curve: {} ({} metric(s) compared)", verdict_word(c.verdict, color, colorize), c.metrics.size()));
  return out;
}

std::string rank_comparison_text(const RankComparison& c, int width, bool color, VerdictColorizer colorize) {
  width = std::clamp(width, 40, 100);
  std::string out;
  auto line = [&](const std::string& s) { out += fit(s, width) + "\n"; };
  line(fmt::format("run: {} ({})", terminal_text(c.path), c.format));
  for (const RankMetricResult& m : c.metrics) {
    line(fmt::format("{} {}  ranks {}  {} step(s) compared  tol {:.3g}", terminal_text(m.metric),
                     verdict_word(m.verdict, color, colorize), fmt::join(m.ranks, ","), m.steps_compared, c.rel_tol));
    for (const RankDeviation& d : m.inconsistent)
      line(fmt::format("  rank {} departs from step {}: {} step(s), max rel dev {} @{}", d.rank, d.from_step, d.steps,
                       pct(d.max_rel_dev), d.max_rel_dev_step));
    for (const auto& [rank, steps] : m.missing_steps)
      line(fmt::format("  rank {} did not log {} step(s) the others logged (first {})", rank, steps.size(),
                       steps.front()));
  }
  // Problems and notes are printed whole: cut to the terminal's width they lost the record and the reason.
  for (const Status& p : c.problems) out += "problem: " + terminal_text(p.message()) + "\n";
  for (const std::string& n : c.notes) out += "note: " + terminal_text(n) + "\n";
  line(fmt::format("ranks: {}{}", verdict_word(c.verdict, color, colorize),
                   c.rank_inconsistent ? "  RANK_INCONSISTENT" : ""));
  return out;
}

}  // namespace parity::curves
