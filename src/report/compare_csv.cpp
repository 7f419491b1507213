// parity.compare.csv/2: one line per compared pair, for spreadsheets and pandas. The columns are
// report/compare_columns.h's, in its order.
// Cells spelled as parity/csv_cell.h says: RFC 4180 quoting; numbers in the shortest round-trip form;
// non-finite as nan/inf/-inf
// (what pandas.read_csv and numpy parse); a cell that does not apply to the row's mode is empty.
#include <cerrno>
#include <cstring>

#include "parity/csv_cell.h"
#include "report/compare_columns.h"
#include "parity/compare_report.h"

namespace parity::report {

namespace {

struct CsvSpelling {
  std::string operator()(std::monostate) const { return {}; }
  std::string operator()(const std::string& s) const { return csv_escape(s); }
  std::string operator()(int64_t v) const { return std::to_string(v); }
  std::string operator()(double v) const { return csv_number(v); }
  std::string operator()(bool v) const { return v ? "true" : "false"; }
};

}  // namespace

void write_compare_csv(const CompareResult& result, std::FILE* out) {
  std::string columns;
  for (const Column& c : compare_columns()) columns += (columns.empty() ? "" : ",") + std::string(c.name);
  std::fputs(csv_header(columns).c_str(), out);
  std::vector<Cell> cells;
  std::string line;
  for (const CompareRow& r : result.rows) {
    compare_row_cells(r, cells);
    line = schemas::kCompareCsv.id;
    for (const Cell& cell : cells) {
      line += ',';
      line += std::visit(CsvSpelling{}, cell);
    }
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), out);
  }
}

Status write_compare_csv(const CompareResult& result, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Status::IOError(path + ": cannot write CSV: " + std::strerror(errno));
  write_compare_csv(result, f);
  const bool failed = std::ferror(f) != 0;
  if (std::fclose(f) != 0 || failed) return Status::IOError(path + ": error writing CSV");
  return Status::OK();
}

}  // namespace parity::report
