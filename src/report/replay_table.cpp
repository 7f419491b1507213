// Terminal table of a parity.replay/1 result (parity/replay_report.h).
#include <cmath>
#include <string>

#include "parity/terminal_text.h"
#include "parity/replay_report.h"

namespace parity::report {
namespace {

std::string sgr(const std::string& s, const char* code, bool color) {
  return color ? std::string("\x1b[") + code + "m" + s + "\x1b[0m" : s;
}

// An error ratio as every output spells it: "0.41 u", "non-finite" (docs/judgement.md).
std::string units(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>() == "Infinity" || v.get<std::string>() == "NaN" ? "non-finite" : v.get<std::string>();
  if (!v.is_number()) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g u", v.get<double>());
  return buf;
}

// Event and function names come from the dump: control characters escaped first (terminal_text.h).
std::string clip(const std::string& raw, size_t n) {
  const std::string s = terminal_text(raw);
  return s.size() <= n ? s : "…" + s.substr(s.size() - (n - 1));
}

}  // namespace

namespace {

// The selected events' table (those that differ, or all) and why the others were not replayed.
void print_replay_events(std::FILE* out, const nlohmann::json& doc, long limit, bool all, bool color) {
  const nlohmann::json& s = doc["summary"];
  std::fprintf(out, "  %-48s %-28s %-5s %-12s %-9s %s\n", "event", "fn", "dtype", "error", "bit-exact", "");
  long shown = 0, hidden = 0;
  for (const auto& e : doc["events"]) {
    const bool replayed = e.value("status", "") == "replayed";
    const bool creates = replayed && e.value("creates_error", false);
    const bool exact = replayed && e.value("bit_exact", false);
    if (!all && replayed && !creates && exact) continue;
    if (limit > 0 && shown >= limit) {
      ++hidden;
      continue;
    }
    ++shown;
    std::string tail = !replayed ? sgr("not replayed: ", "33", color) + terminal_text(e.value("reason", ""))
                       : creates ? sgr("creates error", "31", color)
                                 : std::string("carries");
    if (replayed && !exact && e.contains("note")) tail += " (" + terminal_text(e.value("note", "")) + ")";
    std::string fn = e.contains("fn") && e["fn"].is_string() ? e["fn"].get<std::string>() : "";
    std::string dtype = e.contains("dtype") && e["dtype"].is_string() ? e["dtype"].get<std::string>() : "";
    std::fprintf(out, "  %-48s %-28s %-5s %-12s %-9s %s\n", clip(e.value("event", ""), 48).c_str(), clip(fn, 28).c_str(),
                 dtype.c_str(), replayed ? units(e["error_u"]).c_str() : "",
                 replayed ? (exact ? "yes" : "no") : "", tail.c_str());
  }
  if (hidden > 0) std::fprintf(out, "  ... %ld more (--limit 0 shows all)\n", hidden);
  if (shown == 0) std::fprintf(out, "  every replayed op carries its inputs' error and reproduces its recorded output bit for bit\n");
  if (s.contains("reasons") && !s["reasons"].empty()) {
    std::fprintf(out, "%s\n", sgr("Not replayed", "1", color).c_str());
    for (const auto& [reason, n] : s["reasons"].items()) std::fprintf(out, "  %lld × %s\n", n.get<long long>(), terminal_text(reason).c_str());
  }
}

}  // namespace

void print_replay(std::FILE* out, const nlohmann::json& doc, long limit, bool all, bool color) {
  const nlohmann::json& s = doc["summary"];
  std::fprintf(out, "%s %s: %lld op events, %lld selected, %lld replayed (%lld bit-exact), %lld not replayed, %lld create error\n",
               sgr("Replay", "1", color).c_str(), terminal_text(doc.value("run", "")).c_str(), s.value("op_events", 0LL),
               s.value("selected", 0LL), s.value("replayed", 0LL), s.value("bit_exact", 0LL), s.value("not_replayed", 0LL),
               s.value("creates_error", 0LL));
  // Nothing selected (a run without op events): no empty table, no "every replayed op carries ...".
  if (s.value("selected", 0LL) > 0) print_replay_events(out, doc, limit, all, color);
  for (const auto& p : doc["problems"]) std::fprintf(out, "problem: %s\n", terminal_text(p.get<std::string>()).c_str());
}

void print_replay_verdict(std::FILE* out, const nlohmann::json& doc, const ReplayOutcome& outcome) {
  static const nlohmann::json kNoSummary = nlohmann::json::object();
  const auto it = doc.find("summary");
  const nlohmann::json& s = it != doc.end() ? *it : kNoSummary;
  std::fprintf(out, "replay: %s | %lld of %lld replayed, %lld bit-exact, %lld create error | %.2f s\n", outcome.headline,
               s.value("replayed", 0LL), s.value("selected", 0LL), s.value("bit_exact", 0LL), s.value("creates_error", 0LL),
               doc.value("elapsed_seconds", 0.0));
}

ReplayOutcome replay_outcome(const nlohmann::json& summary) {
  const long long selected = summary.value("selected", 0LL), replayed = summary.value("replayed", 0LL);
  const long long creates = summary.value("creates_error", 0LL), exact = summary.value("bit_exact", 0LL);
  const bool clean = selected > 0 && replayed == selected && creates == 0 && exact == replayed;
  ReplayOutcome o;
  o.verdict = clean ? Verdict::kPass : Verdict::kFail;
  o.nothing = selected == 0;
  o.headline = selected == 0 ? "NOTHING TO REPLAY" : replayed == 0 ? "NOTHING REPLAYED" : clean ? "REPRODUCED" : "DIFFERENCES";
  return o;
}

}  // namespace parity::report
