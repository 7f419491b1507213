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
  std::string identity;                // or, between processes that listed different ranks: record_identity
  std::optional<TensorStats> stats;    // set when the tensor was read
  Status problem;                      // why not, otherwise
};

// A record's identity across processes that listed different ranks of one capture: rank, step, name.
std::string record_identity(const Record& r);

// `by_identity`: address each entry by its identity instead of its index.
std::string encode_loaded_stats(const std::vector<LoadedStats>& loaded, bool by_identity = false);
// Appends a message's entries to `out` (with their index, or their identity). Corrupt when truncated or
// written by another build.
Status decode_loaded_stats(std::string_view message, std::vector<LoadedStats>& out);

}  // namespace parity::analysis_detail
