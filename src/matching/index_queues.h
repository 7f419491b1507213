// src/matching/index_queues.h — first-in, first-out lists of record indices, one per key, threaded
// through one index array (private to the matching module).
//
// Pairing keeps, for every (rank, step, name), the records of that key not yet paired, in listing order.
// A key nearly always has one record; a std::deque per key held a 512-byte block and made the pairing the
// peak of a million-record compare. Here a key's list is two indices and the links are one array of
// indices over all records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace parity::matching {

class IndexQueues {
 public:
  static constexpr size_t kNone = SIZE_MAX;
  struct Queue {
    size_t first = kNone, last = kNone;
    bool empty() const noexcept { return first == kNone; }
  };

  explicit IndexQueues(size_t records) : next_(records, kNone) {}

  // Appends record i (< records, each at most once) to q.
  void push(Queue& q, size_t i) {
    (q.empty() ? q.first : next_[q.last]) = i;
    q.last = i;
  }
  // Removes and returns q's first record; q must not be empty.
  size_t pop(Queue& q) {
    const size_t i = q.first;
    q.first = next_[i];
    return i;
  }

 private:
  std::vector<size_t> next_;
};

}  // namespace parity::matching
