// What a process sends to process 0 in `parity overflow` under a group of processes
// (parity/process_group.h): the statistics it computed for its share of the records stored without any,
// or why a record could not be read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parity/source.h"

namespace parity::analysis_detail {

struct LoadedStats {
  uint64_t index = 0;                  // the record's position among the records analysed
  std::optional<TensorStats> stats;    // set when the tensor was read
  Status problem;                      // why not, otherwise
};

std::string encode_loaded_stats(const std::vector<LoadedStats>& loaded);
// Appends a message's entries to `out`. Corrupt when truncated or written by another build.
Status decode_loaded_stats(std::string_view message, std::vector<LoadedStats>& out);

}  // namespace parity::analysis_detail
