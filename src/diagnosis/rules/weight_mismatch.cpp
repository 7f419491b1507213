// WEIGHT_MISMATCH: parameters (or buffers: running statistics, scales) differ before any computation (different initialisation seed, a checkpoint
// loaded differently, a missing key). Seed 004 §2.1 / §6: fix inputs and weights first.
#include <algorithm>
#include <cmath>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  std::vector<std::string> lines, events;
  double worst = 0;
  int64_t params_total = 0, params_differ = 0;
  for (const Suspect& s : ctx.analysis->suspects) {
    if (s.kind != SuspectKind::kParameters) continue;
    const EventError& e = event_of(ctx, s);
    events.push_back(e.name);
    for (size_t i : e.rows) {
      const CompareRow& row = ctx.result->rows[i];
      if (row.golden->role != "parameter" && row.golden->role != "parameters" && row.golden->role != "buffer") continue;
      if (row.noise == NoiseClass::kNoise) continue;
      lines.push_back(fmt::format("{}: {}", row.golden->name, row_summary(row)));
    }
    worst = std::max(worst, s.param_ratio);
  }
  // A weight that is the golden's transpose (compared as such, within rounding) in a layer whose output
  // differs: the layer uses the transposed weight. The same transpose in a layer whose output agrees is
  // only another storage layout (Hugging Face's Conv1D), not a cause.
  for (const CompareRow& row : ctx.result->rows) {
    if (row.golden->role != "parameter" || row.layout_note.find("transposed") == std::string::npos) continue;
    // The layer that uses it: the parameter's own module event, else the innermost enclosing module with
    // outputs (nn.MultiheadAttention reads out_proj.weight without calling out_proj).
    const EventError* user = nullptr;
    for (const EventError& e : ctx.analysis->events) {
      const std::string& m = row.golden->module;
      const bool encloses = e.module == m || (m.size() > e.module.size() && m.compare(0, e.module.size(), e.module) == 0 &&
                                              m[e.module.size()] == '.');
      if (!encloses || e.direction != "forward" || e.step != row.golden->step || e.rank != row.golden->rank ||
          std::isnan(e.output_ratio) || e.op.find('#') != std::string::npos)
        continue;
      if (!user || e.module.size() > user->module.size()) user = &e;
    }
    for (const EventError* found : {user}) {
      if (!found || !(found->output_ratio > ctx.options.noise.noise_max)) continue;
      const EventError& e = *found;
      events.push_back(e.name);
      lines.push_back(fmt::format("{}: the golden's weight transposed ({}), and {}'s output differs by {}: the layer "
                                  "uses the transposed weight", row.golden->name, row.layout_note, e.name,
                                  units(e.output_ratio)));
      worst = std::max(worst, e.output_ratio);
    }
  }
  if (events.empty()) return {};
  // How many parameter rows of the first step exist and differ (the scale of the mismatch).
  for (const CompareRow& row : ctx.result->rows) {
    if ((row.golden->role == "parameter" || row.golden->role == "parameters" || row.golden->role == "buffer") &&
        row.golden->direction != "backward") {
      ++params_total;
      if (row.noise == NoiseClass::kElevated || row.noise == NoiseClass::kStructural) ++params_differ;
    }
  }
  Diagnosis d;
  d.strength = 3;
  d.severity = Severity::kFail;  // two runs of other weights are not comparable at all
  d.events = events;
  d.evidence.push_back(fmt::format("{} of {} parameter and buffer records differ beyond rounding (worst {}) before use",
                                   params_differ, params_total, units(worst)));
  append_limited(d.evidence, lines, 8);
  d.advice =
      "Load the same checkpoint on both sides (or initialise with the same seed before building the model), "
      "and check for keys that were missing or renamed while loading.";
  return {d};
}

}  // namespace

extern const Rule rule_weight_mismatch{"WEIGHT_MISMATCH", "Parameters differ before any computation", run};

}  // namespace parity
