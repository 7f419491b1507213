// parity info RUN — what a capture run holds: parts (ranks), steps, events by kind, bytes, scalars,
// the environment fingerprint, and whether each part is complete or where its torn tail begins.
// Parses options, reads the run (read_run_info: under mpirun each process reads its share of the ranks),
// renders text or JSON (schema parity.info/1, docs/dump-format.md). Exit 0 = every part complete and readable, 1 = a part is torn or unclosed or
// a record is unreadable (everything before it is still listed), 2 = not a run.
#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "parity/terminal_text.h"
#include "parity/json_number.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/ui.h"
#include "parity/dump.h"
#include "parity/run_info.h"

namespace parity::cli {
namespace {

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) { v /= 1024; ++u; }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string steps_text(const std::vector<int64_t>& s) {
  if (s.empty()) return "none";
  bool contiguous = s.back() - s.front() + 1 == static_cast<int64_t>(s.size());
  if (contiguous) return s.size() == 1 ? fmt::format("{}", s.front()) : fmt::format("{}..{}", s.front(), s.back());
  std::string out;
  for (size_t i = 0; i < s.size() && i < 12; ++i) out += fmt::format("{}{}", i ? "," : "", s[i]);
  if (s.size() > 12) out += ",...";
  return out;
}

// One line of the fingerprint's most telling fields.
std::string fingerprint_line(const nlohmann::json& f) {
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
  if (f.contains("model") && f["model"].is_object()) {
    const auto& m = f["model"];
    line += fmt::format("; model {} ({} parameters", m.value("class", "?"), m.value("parameters", 0));
    if (m.contains("parameter_dtypes") && m["parameter_dtypes"].is_object())
      for (auto it = m["parameter_dtypes"].begin(); it != m["parameter_dtypes"].end(); ++it)
        line += fmt::format(", {} {}", it.key(), it.value().dump());
    line += ")";
  }
  if (f.contains("capture") && f["capture"].is_object())
    line += fmt::format("; capture level {} mode {}", f["capture"].value("level", "?"), f["capture"].value("mode", "?"));
  if (f.contains("hostname")) line += "; host " + g("hostname");
  return line;
}

}  // namespace

CommandAction setup_info(CLI::App& sub, const GlobalOptions& global) {
  struct Opts {
    std::string run;
    std::string json_path;
    bool full_fingerprint = false;
  };
  auto o = std::make_shared<Opts>();
  sub.add_option("run", o->run, "Capture run directory (or one of its rank<R>/ parts)")->required();
  sub.add_option("--json", o->json_path, "Write the summary as JSON (schema parity.info/1, docs/dump-format.md); '-' = stdout");
  sub.add_flag("--fingerprint", o->full_fingerprint, "Print every fingerprint in full (JSON)");

  return [o, &global]() -> int {
    Result<RunInfo> r = read_run_info(o->run, global.group);
    if (!is_output_process(global.group)) return r.ok() ? kExitOk : kExitUsage;  // process 0 speaks
    if (!r.ok()) {
      std::fprintf(stderr, "parity info: %s\n", terminal_text(r.status().message()).c_str());
      return kExitUsage;
    }
    const RunInfo& run = *r;
    const bool color = use_color(global);
    bool all_complete = true;
    nlohmann::json j = {{"schema", "parity.info/1"}, {"run", o->run}, {"parts", nlohmann::json::array()}};
    std::string text = fmt::format("run {} ({})\n", o->run, dump::kDumpSchema);
    const std::map<int, std::string>& fps = run.fingerprints;
    for (const dump::PartSummary& p : run.parts) {
      const bool complete = p.closed && p.manifest_tail.empty();
      all_complete = all_complete && complete;
      std::string state = complete ? style("complete", "32", color)
                          : !p.manifest_tail.empty()
                              ? style(fmt::format("TORN: {}; readable up to byte {} of {}", p.manifest_tail,
                                                  p.manifest_valid_bytes, p.manifest_bytes), "31", color)
                              : style("not closed: the writer did not stop (crash or kill?); every record is intact",
                                      "33", color);
      text += fmt::format("part rank{}: {}\n", p.rank, state);
      std::string kinds;
      for (const auto& [k, n] : p.events_by_kind) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", k, n);
      text += fmt::format("  steps {} ({} with events); {} events ({}); tensor data {}; scalars {} records\n",
                          steps_text(p.steps), p.steps.size(), p.events, kinds.empty() ? "none" : kinds,
                          human_bytes(p.data_bytes), p.scalar_records);
      nlohmann::json pj = {{"rank", p.rank}, {"dir", p.dir.string()}, {"complete", complete}, {"closed", p.closed},
                           {"torn_tail", p.manifest_tail.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.manifest_tail)},
                           {"manifest_bytes", p.manifest_bytes}, {"manifest_valid_bytes", p.manifest_valid_bytes},
                           {"events", p.events}, {"events_by_kind", p.events_by_kind}, {"steps", p.steps},
                           {"data_bytes", p.data_bytes}, {"scalar_records", p.scalar_records}};
      if (auto it = fps.find(p.rank); it != fps.end()) {
        nlohmann::json f = nlohmann::json::parse(it->second, nullptr, false);
        if (!f.is_discarded()) {
          text += "  fingerprint: " + (f.is_object() ? fingerprint_line(f) : f.dump()) + "\n";
          if (o->full_fingerprint) text += f.dump(2) + "\n";
          pj["fingerprint"] = f;
        }
      } else {
        text += "  fingerprint: none\n";
      }
      j["parts"].push_back(pj);
    }
    j["problems"] = nlohmann::json::array();
    for (const Status& s : run.problems) {
      j["problems"].push_back(s.message());
      text += style("problem: ", "33", color) + s.message() + "\n";
    }
    j["complete"] = all_complete && run.problems.empty();
    if (o->json_path == "-") {
      std::cout << json_text(j, 2) << "\n";
      std::fputs(text.c_str(), stderr);
    } else {
      if (!o->json_path.empty()) {
        Status st = write_output(o->json_path, json_text(j, 2) + "\n");
        if (!st.ok()) {
          std::fprintf(stderr, "parity info: %s\n", terminal_text(st.message()).c_str());
          return kExitUsage;
        }
      }
      if (!global.quiet || !j["complete"].get<bool>()) std::fputs(text.c_str(), stdout);
    }
    return j["complete"].get<bool>() ? kExitOk : kExitDifferences;
  };
}

}  // namespace parity::cli
