// matching/exact.h — pairing the records of two sources by key (rank, step, name).
//
// Plain tensor files have rank = step = -1, so their key is the name alone. A record that finds no
// partner is returned as unmatched, never dropped; when one side holds the same key twice, the k-th
// occurrence pairs with the k-th occurrence on the other side and the extras stay unmatched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parity/source.h"

namespace parity::matching {

struct RecordFilter {
  int64_t step = -1;  // keep only records of this step (-1 = all); records without a step are kept
  int rank = -1;      // keep only records of this rank (-1 = all); records without a rank are kept
  bool keeps(const Record& r) const;
};

struct ExactPairing {
  // Indices into the golden / target record vectors, in golden listing order.
  std::vector<std::pair<size_t, size_t>> pairs;
  std::vector<size_t> unmatched_golden, unmatched_target;  // in each side's listing order
  int64_t filtered_golden = 0, filtered_target = 0;        // records left out by the filter
  // Each side held exactly one record and their names differ (`parity compare a.npy b.npy`): the two
  // were paired by position, since there is nothing else they could be compared with.
  bool single_by_position = false;
};

ExactPairing pair_exact(const std::vector<Record>& golden, const std::vector<Record>& target,
                        const RecordFilter& filter);

// Op events are named by their parent call and a per-op counter ("layers.0.attn/transpose#1/..."): the
// names agree only while both sides run the same op sequence inside that call. Where the sequences
// differ (another implementation: fused attention, a chunked linear), equal names are different calls,
// so every exactly-paired op record of that call is released to the unmatched lists for the order
// alignment (which pairs them with a confidence). Returns how many calls were released.
int64_t release_diverging_op_sequences(const std::vector<Record>& golden, const std::vector<Record>& target,
                                       ExactPairing& pairing);

}  // namespace parity::matching
