// STRUCTURE_DIFF: an op that one run executes and the other does not, inside a module call that creates
// error after it (analysis suspect kind "structure", docs/judgement.md "Ops present in one run only").
// An attention without its 1/√d scaling makes the softmax's input differ and the softmax a carrier: the
// cause is the op that is missing, and its recorded arguments (docs/dump-format.md "args") say what it
// did — `__truediv__(<tensor>, 8.0)`.
#include <nlohmann/json.hpp>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;
using nlohmann::json;

// "(<tensor f32 [2, 4, 16, 16]>, 8.0, dim=-1)": the recorded call, as written in Python.
std::string call_text(const std::string& args_json) {
  const json j = json::parse(args_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "";
  std::string out;
  for (const json& v : j.value("args", json::array())) out += (out.empty() ? "" : ", ") + (v.is_string() ? v.get<std::string>() : v.dump());
  for (const auto& [k, v] : j.value("kwargs", json::object()).items())
    out += (out.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return "(" + out + ")";
}

// The one-sided record of a structure suspect (its forward output, else any record of its event) and the
// run that holds it.
std::pair<const Record*, bool> one_sided_record(const DiagnosisContext& ctx, const Suspect& s) {
  const Record* found = nullptr;
  bool golden = true;
  for (const bool side : {true, false})
    for (const Record& r : side ? ctx.result->unmatched_golden : ctx.result->unmatched_target) {
      if (r.step != s.step || r.rank != s.rank || event_stem(r) != s.name) continue;
      if (!found || (r.role == "output" && found->role != "output")) found = &r, golden = side;
    }
  return {found, golden};
}

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::vector<std::string> lines, events;
  bool structural = false;
  for (const Suspect& s : ctx.analysis->suspects) {
    if (s.kind != SuspectKind::kStructure) continue;
    const auto [record, golden] = one_sided_record(ctx, s);
    const RecordSource* source = golden ? ctx.golden_source : ctx.target_source;
    const std::string call = record && source ? call_text(source->op_arguments_json(*record)) : "";
    // s.why says which run has it and the error its call creates after it.
    lines.push_back(fmt::format("{}: {}{} at execution order {}: {}", s.name, s.op, call, record ? record->order : -1, s.why));
    events.push_back(s.name);
    structural = structural || s.output_ratio > ctx.options.noise.structural_min;
  }
  if (lines.empty()) return {};
  Diagnosis d;
  d.strength = structural ? 3 : 2;
  d.severity = Severity::kWarn;  // a cause: the rows of its call say whether the run fails
  d.events = events;
  append_limited(d.evidence, lines, 6);
  d.advice =
      "The two runs do not execute the same ops in this call: add the missing op to the run that lacks it (or "
      "remove the extra one), with the arguments shown — unless the change is intended, in which case the "
      "golden should change too.";
  return {std::move(d)};
}

}  // namespace

extern const Rule rule_structure_diff{"STRUCTURE_DIFF", "An op runs in one run only", run};

}  // namespace parity
