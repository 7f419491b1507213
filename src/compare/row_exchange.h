// What a process sends to process 0 after measuring its share of the rows (run_compare under a
// ProcessGroup of several processes, parity/process_group.h): for each row it measured, the fields that
// measure_row writes — metrics, statistics, verdict, reason, layout note — and the parameter update
// (unjudged: process 0 judges it against the gathered gradients); nothing that planning, which process
// 0 does itself, already knows. With the message goes the sender's peak resident memory.
//
// A row is addressed by its index when every process planned the same rows (they all list everything),
// or by its identity when each process listed only its own ranks (RankShares): indices then differ.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parity/compare.h"

namespace parity::compare {

enum class RowAddress : uint8_t { kIndex = 0, kIdentity = 1 };

// A row's identity across processes that listed different parts of the same captures: rank, step and
// the two records' names (as bytes).
std::string row_identity(const CompareRow& row);

// The rows a message addressed by identity can name, held as 64-bit hashes of their identities, sorted,
// in a spill list (parity/spill.h): 16 bytes a row, where a million identity strings were ~100 MB at
// process 0 and a hash map of their hashes ~40 MB. Rows that share an identity — or, far less likely, a
// hash — are left out: no message can tell them apart, so process 0 measures them itself.
class RowsByIdentity {
 public:
  RowsByIdentity() = default;
  explicit RowsByIdentity(const RowList& rows);
  // The index of the row whose identity is `identity` (checked in full, not only by its hash), if any.
  std::optional<size_t> find(std::string_view identity, const RowList& rows) const;

 private:
  SpillVector<std::pair<uint64_t, size_t>> index_;  // (identity hash, row index), by hash
};

// The measured fields of rows[i] for every i in `which`, and the sender's peak resident memory, as one
// message.
std::string encode_measured_rows(const RowList& rows, const std::vector<size_t>& which,
                                 int64_t peak_resident_bytes, RowAddress address = RowAddress::kIndex);

// Writes a message's measured fields into `rows` and returns the sender's peak resident memory. A message
// addressed by identity needs `by_identity` (row_identity → index); a row it names that is not there is
// skipped (the receiver did not plan it), and every row written is marked in `applied` when given.
// Corrupt when the message is truncated, names an index out of range, or was written by a binary whose
// measurement structs differ.
class RowsByIdentity;
Result<int64_t> apply_measured_rows(std::string_view message, RowList& rows,
                                    const RowsByIdentity* by_identity = nullptr, std::vector<char>* applied = nullptr);

}  // namespace parity::compare
