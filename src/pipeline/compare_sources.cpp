// open_compare_sources (parity/compare_runs.h): each process of a group opens what it will measure.
#include "parity/compare_runs.h"
#include "parity/open_source.h"

namespace parity {

CompareSources open_compare_sources(const std::string& golden_path, const std::string& golden_format,
                                    const std::string& target_path, const std::string& target_format,
                                    const ProcessGroup* group) {
  CompareSources s;
  if (is_distributed(group))
    s.shares = plan_rank_shares(source_rank_parts(golden_path, golden_format),
                                source_rank_parts(target_path, target_format), group->size());
  auto open = [&](const std::string& path, const std::string& format) {
    if (s.shares && !group->is_root())
      return open_source_ranks(path, format, s.shares->ranks[static_cast<size_t>(group->rank())]);
    return open_source(path, format);
  };
  Result<std::unique_ptr<RecordSource>> golden = open(golden_path, golden_format);
  if (!golden.ok()) {
    s.status = golden.status().WithContext("cannot open golden");
    return s;
  }
  Result<std::unique_ptr<RecordSource>> target = open(target_path, target_format);
  if (!target.ok()) {
    s.status = target.status().WithContext("cannot open target");
    return s;
  }
  s.golden = std::move(golden).value();
  s.target = std::move(target).value();
  return s;
}

}  // namespace parity
