// RANK_INCONSISTENT: some ranks agree with the golden and others do not. Data-parallel ranks run the same
// numerics on different data; when only some ranks diverge, look at what is rank-specific: their data
// shard, their device, collective communication (seed 000 §1.3: HCCL reduction error accumulates).
#include <map>

#include "diagnosis/rule_util.h"

namespace parity {
namespace {

using namespace diagnosis_detail;

std::vector<Diagnosis> run(const DiagnosisContext& ctx) {
  struct RankInfo {
    int64_t rows = 0, structural = 0;
    std::string first_bad;
  };
  std::map<int, RankInfo> ranks;
  for (const CompareRow& row : ctx.result->rows) {
    if (row.golden->rank < 0 || row.noise == NoiseClass::kUnknown) continue;
    RankInfo& r = ranks[row.golden->rank];
    ++r.rows;
    if (row.noise == NoiseClass::kStructural) {
      if (r.structural++ == 0) r.first_bad = row.golden->name;
    }
  }
  if (ranks.size() < 2) return {};
  int bad = 0, good = 0;
  for (const auto& [rank, r] : ranks) (r.structural > 0 ? bad : good)++;
  if (bad == 0 || good == 0) return {};
  Diagnosis d;
  d.strength = 2;
  d.severity = Severity::kWarn;
  for (const auto& [rank, r] : ranks) {
    d.evidence.push_back(fmt::format("rank {}: {} of {} rows structural{}", rank, r.structural, r.rows,
                                     r.structural ? ", first " + r.first_bad : std::string()));
    if (r.structural) d.events.push_back(r.first_bad);
  }
  d.advice =
      "Only some ranks diverge: check those ranks' data shards and seeds, their devices, and the collectives "
      "(all-reduce order and dtype) that feed them.";
  return {d};
}

}  // namespace

extern const Rule rule_rank_inconsistent{"RANK_INCONSISTENT", "Ranks disagree: only some diverge", run};

}  // namespace parity
