// parity.compare.arrow/1: the row table as an Arrow IPC file, the columns and values of the CSV
// (report/compare_columns.h) with their types kept — for pyarrow, polars, pandas and DuckDB at a million
// rows, where a CSV must be parsed again. Streamed from the rows in batches (report/arrow_file.h).
#include "report/arrow_file.h"
#include "report/compare_columns.h"
#include "parity/compare_report.h"

namespace parity::report {

Status write_compare_arrow(const CompareResult& result, std::FILE* out) {
  ArrowFileWriter writer(out, compare_columns(), {{"parity.schema", schemas::kCompareArrow.id}});
  std::vector<Cell> cells;
  for (const CompareRow& r : result.rows) {
    compare_row_cells(r, cells);
    writer.append_row(cells);
  }
  return writer.finish();
}

}  // namespace parity::report
