// report/compare_columns.h — the columns of a comparison's row table, in order, with their types: the one
// list that the CSV (parity.compare.csv/2) and the Arrow file (parity.compare.arrow/1) both write, so the
// two can never disagree on a column's name, place or value (docs/compare-json.md, "CSV" and "Arrow").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "parity/compare.h"

namespace parity::report {

enum class CellType { kText, kInt, kReal, kBool };

struct Column {
  const char* name;
  CellType type;
};

// One value of a row. Empty (std::monostate) where the column does not apply to the row's mode: the CSV
// writes an empty cell, the Arrow file a null. A NaN metric is a value (the CSV's "nan"), not empty.
// Text is as the row holds it (names from other people's files may hold any bytes); each file's writer
// makes it what its format requires (csv_escape, the Arrow writer: well-formed UTF-8).
using Cell = std::variant<std::monostate, std::string, int64_t, double, bool>;

// The columns in order.
std::span<const Column> compare_columns();

// `row`'s cells in compare_columns() order, into `cells` (cleared first; reused across rows).
void compare_row_cells(const CompareRow& row, std::vector<Cell>& cells);

}  // namespace parity::report
