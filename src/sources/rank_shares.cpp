// plan_rank_shares and open_divided_sources (parity/open_source.h): which ranks of multi-rank captures
// each process of a group lists and measures, and opening them so.
#include <algorithm>
#include <map>

#include "parity/open_source.h"
#include "parity/process_group.h"

namespace parity {

std::optional<RankShares> plan_rank_shares(const std::vector<std::vector<RankPart>>& sources, int processes) {
  if (sources.empty() || processes < 1) return std::nullopt;
  std::map<int, int64_t> bytes;  // rank → bytes of every source's parts, in rank order
  for (const std::vector<RankPart>& parts : sources) {
    if (parts.empty()) return std::nullopt;
    for (const RankPart& p : parts) bytes[p.rank] += p.bytes;
  }
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

DividedSources open_divided_sources(const std::vector<std::pair<std::string, std::string>>& paths_and_formats,
                                    const ProcessGroup* group) {
  DividedSources d;
  if (is_distributed(group)) {
    std::vector<std::vector<RankPart>> parts;
    for (const auto& [path, format] : paths_and_formats) parts.push_back(source_rank_parts(path, format));
    d.shares = plan_rank_shares(parts, group->size());
    // Dividing by rank pays only when every process gets a rank. With fewer ranks than processes (or a
    // rank holding most of the bytes) the others would idle: the rows are then split by bytes instead,
    // every process listing everything, which for so few ranks costs little next to their bytes.
    if (d.shares && std::any_of(d.shares->ranks.begin(), d.shares->ranks.end(),
                                [](const std::vector<int>& ranks) { return ranks.empty(); }))
      d.shares.reset();
  }
  for (const auto& [path, format] : paths_and_formats) {
    d.failed = d.sources.size();
    Result<std::unique_ptr<RecordSource>> s =
        d.shares && !group->is_root() ? open_source_ranks(path, format, d.shares->ranks[static_cast<size_t>(group->rank())])
                                      : open_source(path, format);
    if (!s.ok()) {
      d.status = s.status();
      d.sources.clear();
      return d;
    }
    d.sources.push_back(std::move(s).value());
  }
  return d;
}

}  // namespace parity
