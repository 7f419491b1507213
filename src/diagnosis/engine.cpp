// The diagnosis engine: runs every registered rule and orders the diagnoses (strongest first).
#include <algorithm>
#include <limits>

#include "parity/diagnosis.h"

namespace parity {

std::vector<Diagnosis> diagnose(const DiagnosisContext& ctx) {
  std::vector<Diagnosis> all;
  DiagnosisContext with_earlier = ctx;
  with_earlier.earlier = &all;  // each rule sees the diagnoses of the rules registered before it
  for (const Rule& rule : registered_rules()) {
    std::vector<Diagnosis> found = rule.run(with_earlier);
    for (Diagnosis& d : found) {
      if (d.code.empty()) d.code = rule.code;
      if (d.title.empty()) d.title = rule.title;
      all.push_back(std::move(d));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Diagnosis& a, const Diagnosis& b) { return a.strength > b.strength; });
  return all;
}

namespace {

// NaN/Inf born in the target at an event the golden keeps finite is the strongest evidence there is. When
// that event is not a compared row (an op that exists only in the target, or whose name was not
// paired), the row-based suspects can only name the module around it; put the origin itself first.
void refine_suspects_with_nan_origin(Findings& f) {
  for (const NanOrigin& o : f.target_overflow.origins) {
    if (o.role_is_grad) continue;
    bool golden_too = false;
    for (const NanOrigin& g : f.golden_overflow.origins) golden_too = golden_too || (g.event == o.event && g.step == o.step && g.rank == o.rank);
    if (golden_too) continue;
    Analysis& a = f.analysis;
    const bool listed = std::any_of(a.suspects.begin(), a.suspects.end(), [&](const Suspect& s) {
      return s.name == o.event && s.step == o.step && s.rank == o.rank;
    });
    if (listed) continue;
    EventError e;
    e.name = o.event;
    e.module = o.module;
    e.op = o.op;
    e.direction = o.direction;
    e.step = o.step;
    e.rank = o.rank;
    e.first_order = e.last_order = o.order;
    e.input_ratio = 0;
    e.output_ratio = std::numeric_limits<double>::infinity();
    e.amplification = std::numeric_limits<double>::infinity();
    e.role = EventRole::kSource;
    a.events.push_back(e);
    Suspect s;
    s.kind = SuspectKind::kSource;
    s.event = a.events.size() - 1;
    s.name = o.event;
    s.module = o.module;
    s.op = o.op;
    s.direction = o.direction;
    s.step = o.step;
    s.rank = o.rank;
    s.score = std::numeric_limits<double>::infinity();
    s.input_ratio = 0;
    s.output_ratio = std::numeric_limits<double>::infinity();
    s.why = "NaN/Inf born here in the target (finite inputs; the golden stays finite): " + o.explanation;
    a.suspects.insert(a.suspects.begin(), std::move(s));
    break;  // the first origin (earliest rank/step) is enough
  }
}

}  // namespace

Findings analyse_and_diagnose(CompareResult& result, const RecordSource* golden, const RecordSource* target,
                              const AnalysisOptions& options) {
  Findings f;
  ensure_classified(result, options, golden, target);
  f.analysis = analyse(result, options, golden, target);
  f.config = config_diff(result.golden_fingerprint, result.target_fingerprint);
  f.timeline = divergence_timeline(result, f.config, options);
  f.target_overflow = analyse_overflow(measured_records(result, /*target_side=*/true).records);
  f.target_overflow.source = result.target_source;
  f.golden_overflow = analyse_overflow(measured_records(result, /*target_side=*/false).records);
  f.golden_overflow.source = result.golden_source;
  refine_suspects_with_nan_origin(f);
  DiagnosisContext ctx;
  ctx.result = &result;
  ctx.analysis = &f.analysis;
  ctx.config = &f.config;
  ctx.target_overflow = &f.target_overflow;
  ctx.golden_overflow = &f.golden_overflow;
  ctx.golden_source = golden;
  ctx.target_source = target;
  ctx.options = options;
  f.diagnoses = diagnose(ctx);
  return f;
}

}  // namespace parity
