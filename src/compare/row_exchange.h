// What a process sends to process 0 after measuring its share of the rows (run_compare under a
// ProcessGroup of several processes, parity/process_group.h): for each row it measured, the fields that
// measure_row writes — metrics, statistics, verdict, reason, layout note — and the parameter update
// (unjudged: process 0 judges it against the gathered gradients); nothing that planning,
// which every process does alike, already knows.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "parity/compare.h"

namespace parity::compare {

// The measured fields of rows[i] for every i in `which`, and the sender's peak resident memory, as one
// message.
std::string encode_measured_rows(const std::vector<CompareRow>& rows, const std::vector<size_t>& which,
                                 int64_t peak_resident_bytes);

// Writes a message's measured fields into `rows` and returns the sender's peak resident memory. Corrupt
// when the message is truncated, names a row out of range, or was written by a binary whose measurement
// structs differ.
Result<int64_t> apply_measured_rows(std::string_view message, std::vector<CompareRow>& rows);

}  // namespace parity::compare
