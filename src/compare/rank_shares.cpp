// plan_rank_shares (parity/compare.h): which ranks of two multi-rank captures each process of a group
// lists and measures.
#include <map>

#include "parity/compare.h"
#include "parity/process_group.h"

namespace parity {

std::optional<RankShares> plan_rank_shares(const std::vector<RankPart>& golden, const std::vector<RankPart>& target,
                                           int processes) {
  if (golden.empty() || target.empty() || processes < 1) return std::nullopt;
  std::map<int, int64_t> bytes;  // rank → bytes of both sides' parts, in rank order
  for (const auto* side : {&golden, &target})
    for (const RankPart& p : *side) bytes[p.rank] += p.bytes;
  std::vector<int> ranks;
  std::vector<int64_t> sizes;
  for (const auto& [rank, b] : bytes) {
    ranks.push_back(rank);
    sizes.push_back(b);
  }
  const std::vector<int> owner = partition_by_bytes(sizes, processes);
  RankShares shares;
  shares.ranks.resize(static_cast<size_t>(processes));
  for (size_t i = 0; i < ranks.size(); ++i) shares.ranks[static_cast<size_t>(owner[i])].push_back(ranks[i]);
  return shares;
}

}  // namespace parity
