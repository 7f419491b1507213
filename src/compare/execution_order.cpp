// Execution order of compared rows (parity/compare.h).
#include <algorithm>

#include "parity/compare.h"

namespace parity {

ExecutionPosition execution_position(const CompareRow& row) {
  return {row.golden->rank, row.golden->step, row.golden->order};
}

std::vector<size_t> rows_in_execution_order(const RowList& rows) {
  SpillVector<std::pair<ExecutionPosition, size_t>> keys;  // (position, row): unique, so sort is stable
  keys.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) keys.emplace_back(execution_position(rows[i]), i);
  std::sort(keys.begin(), keys.end());
  std::vector<size_t> idx(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) idx[i] = keys[i].second;
  return idx;
}

}  // namespace parity
