// The outputs of a run's summary (parity/run_info.h): the parity.info/1 document and the terminal text
// of `parity info`, built here so that the command only reads, calls and prints (issue 32 §5).
#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "parity/json_number.h"
#include "parity/run_info.h"
#include "parity/schemas.h"

namespace parity {

namespace {

using nlohmann::json;

std::string paint(const std::string& text, const char* sgr, bool color) {
  return color ? std::string("\033[") + sgr + "m" + text + "\033[0m" : text;
}

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) { v /= 1024; ++u; }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.1f} {}", v, units[u]);
}

// "3..7" for contiguous steps, else the first twelve and ",...".
std::string steps_text(const std::vector<int64_t>& s) {
  if (s.empty()) return "none";
  bool contiguous = s.back() - s.front() + 1 == static_cast<int64_t>(s.size());
  if (contiguous) return s.size() == 1 ? fmt::format("{}", s.front()) : fmt::format("{}..{}", s.front(), s.back());
  std::string out;
  for (size_t i = 0; i < s.size() && i < 12; ++i) out += fmt::format("{}{}", i ? "," : "", s[i]);
  if (s.size() > 12) out += ",...";
  return out;
}

// The model part of the fingerprint line: "; model Net (1234 parameters, float32 1234)".
std::string model_text(const json& m) {
  std::string line = fmt::format("; model {} ({} parameters", m.value("class", "?"), m.value("parameters", 0));
  if (m.contains("parameter_dtypes") && m["parameter_dtypes"].is_object())
    for (auto it = m["parameter_dtypes"].begin(); it != m["parameter_dtypes"].end(); ++it)
      line += fmt::format(", {} {}", it.key(), it.value().dump());
  return line + ")";
}

// The parallel part of the fingerprint line, for a rank of several or a sharded layout (docs/layout.md
// "Recorded by the capture"): "; parallel tp 2, pp 1, dp 1, this rank tp 1, pp 0, dp 0 (from argument)".
std::string parallel_text(const json& p) {
  auto n = [](const json& j, const char* k) { return j.contains(k) && j[k].is_number_integer() ? j[k].get<int64_t>() : 1; };
  if (n(p, "world") <= 1 && n(p, "tp") <= 1 && n(p, "pp") <= 1 && n(p, "dp") <= 1) return "";
  std::string line = fmt::format("; parallel tp {}, pp {}, dp {}", n(p, "tp"), n(p, "pp"), n(p, "dp"));
  if (p.contains("coords") && p["coords"].is_object()) {
    const json& c = p["coords"];
    auto at = [&](const char* k) { return c.contains(k) && c[k].is_number_integer() ? c[k].get<int64_t>() : 0; };
    line += fmt::format(", this rank tp {}, pp {}, dp {}", at("tp"), at("pp"), at("dp"));
  }
  return line + fmt::format(" (from {})", p.contains("source") && p["source"].is_string() ? p["source"].get<std::string>() : "?");
}

// One line of the fingerprint's most telling fields.
std::string fingerprint_line(const json& f) {
  auto g = [&](const char* k) { return f.contains(k) && f[k].is_string() ? f[k].get<std::string>() : std::string("?"); };
  std::string devices;
  if (f.contains("devices") && f["devices"].is_array())
    for (const auto& d : f["devices"]) {
      if (!devices.empty()) devices += ", ";
      devices += d.value("kind", "?");
      if (d.contains("name") && d["name"].is_string() && !d["name"].get<std::string>().empty())
        devices += " " + d["name"].get<std::string>();
    }
  std::string line = fmt::format("python {}, torch {}, numpy {}; devices: {}; default dtype {}; deterministic {}",
                                 g("python"), g("torch"), g("numpy"), devices, g("default_dtype"),
                                 f.value("deterministic_algorithms", false) ? "on" : "off");
  if (f.contains("seeds") && f["seeds"].is_object() && f["seeds"].contains("seed"))
    line += fmt::format("; seed {}", f["seeds"]["seed"].dump());
  if (f.contains("model") && f["model"].is_object()) line += model_text(f["model"]);
  if (f.contains("capture") && f["capture"].is_object())
    line += fmt::format("; capture level {} mode {}", f["capture"].value("level", "?"), f["capture"].value("mode", "?"));
  if (f.contains("parallel") && f["parallel"].is_object()) line += parallel_text(f["parallel"]);
  if (f.contains("hostname")) line += "; host " + g("hostname");
  return line;
}

// The fingerprint recorded for `rank`, parsed (discarded when it is not JSON); nullopt when none was.
std::optional<json> fingerprint_of(const RunInfo& run, int rank) {
  const auto it = run.fingerprints.find(rank);
  if (it == run.fingerprints.end()) return std::nullopt;
  return json::parse(it->second, nullptr, false);
}

json part_json(const RunInfo& run, const dump::PartSummary& p) {
  json pj = {{"rank", p.rank}, {"dir", p.dir.string()}, {"complete", part_complete(p)}, {"closed", p.closed},
             {"torn_tail", p.manifest_tail.empty() ? json(nullptr) : json(p.manifest_tail)},
             {"manifest_bytes", p.manifest_bytes}, {"manifest_valid_bytes", p.manifest_valid_bytes},
             {"events", p.events}, {"events_by_kind", p.events_by_kind}, {"steps", p.steps},
             {"data_bytes", p.data_bytes}, {"scalar_records", p.scalar_records}};
  const std::optional<json> f = fingerprint_of(run, p.rank);
  if (f && !f->is_discarded()) pj["fingerprint"] = *f;
  return pj;
}

// complete, torn (where), or not closed by its writer.
std::string part_state(const dump::PartSummary& p, bool color) {
  if (part_complete(p)) return paint("complete", "32", color);
  if (!p.manifest_tail.empty())
    return paint(fmt::format("TORN: {}; readable up to byte {} of {}", p.manifest_tail, p.manifest_valid_bytes,
                             p.manifest_bytes), "31", color);
  return paint("not closed: the writer did not stop (crash or kill?); every record is intact", "33", color);
}

std::string part_text(const RunInfo& run, const dump::PartSummary& p, const RunInfoTextOptions& options) {
  std::string text = fmt::format("part rank{}: {}\n", p.rank, part_state(p, options.color));
  std::string kinds;
  for (const auto& [k, n] : p.events_by_kind) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", k, n);
  text += fmt::format("  steps {} ({} with events); {} events ({}); tensor data {}; scalars {} records\n",
                      steps_text(p.steps), p.steps.size(), p.events, kinds.empty() ? "none" : kinds,
                      human_bytes(p.data_bytes), p.scalar_records);
  const std::optional<json> f = fingerprint_of(run, p.rank);
  if (!f) return text + "  fingerprint: none\n";
  if (f->is_discarded()) return text;  // recorded but not JSON: neither a line nor a key
  text += "  fingerprint: " + (f->is_object() ? fingerprint_line(*f) : f->dump()) + "\n";
  if (options.full_fingerprints) text += f->dump(2) + "\n";
  return text;
}

}  // namespace

bool part_complete(const dump::PartSummary& part) { return part.closed && part.manifest_tail.empty(); }

bool run_complete(const RunInfo& run) {
  for (const dump::PartSummary& p : run.parts)
    if (!part_complete(p)) return false;
  return run.problems.empty();
}

std::string run_info_json(const RunInfo& run, const std::string& run_label, int indent) {
  json j = {{"schema", schemas::kInfo.id}, {"run", run_label}, {"parts", json::array()}};
  for (const dump::PartSummary& p : run.parts) j["parts"].push_back(part_json(run, p));
  j["problems"] = json::array();
  for (const Status& s : run.problems) j["problems"].push_back(s.message());
  j["complete"] = run_complete(run);
  return json_text(j, indent);
}

std::string run_info_text(const RunInfo& run, const std::string& run_label, const RunInfoTextOptions& options) {
  std::string text = fmt::format("run {} ({})\n", run_label, schemas::kDump.id);
  for (const dump::PartSummary& p : run.parts) text += part_text(run, p, options);
  for (const Status& s : run.problems) text += paint("problem: ", "33", options.color) + s.message() + "\n";
  return text;
}

}  // namespace parity
