// parity/compare_report.h — the human and table outputs of `parity compare`, public in the report module
// so the CLI, the tests and library users call the same writers: CSV (parity.compare.csv/2), the Arrow
// file (parity.compare.arrow/1), msprobe's compare_result layout (parity.compare.msprobe/1) and the
// terminal sections (header, table, unmatched, problems, notes, verdict line); ids in parity/schemas.h.
// The JSON (parity.compare/1) is written by src/pipeline/compare_json.cpp (parity/compare_runs.h).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "parity/compare.h"
#include "parity/compare_runs.h"
#include "parity/schemas.h"

namespace parity::report {

// CSV, one line per row in result order after the header line; the first column is the schema
// ("parity.compare.csv/2", parity/csv_cell.h).
// Columns: docs/compare-json.md, section "CSV". Errors name the file.
Status write_compare_csv(const CompareResult& result, const std::string& path);
void write_compare_csv(const CompareResult& result, std::FILE* out);

// The same rows and columns as an Arrow IPC file (parity.compare.arrow/1: the CSV's columns, typed; a
// cell the CSV leaves empty is a null; the schema's metadata "parity.schema" names the schema), written
// in batches of 16,384 rows. Columns: docs/compare-json.md, section "Arrow".
Status write_compare_arrow(const CompareResult& result, std::FILE* out);

// The msprobe layout has no schema column (a column msprobe lacks would break the scripts it is for): the
// xlsx names schemas::kCompareMsprobe in its document properties (Comments); docs/compare-json.md "msprobe".
// The rows in msprobe's compare_result layout (mindstudio-probe 26.2.0; docs/compare-json.md "msprobe"):
// its columns, names and cell words for the mode of the result (tensor → its "all" columns, statistics
// → "summary", checksums only → "md5"), NPU = target, Bench = golden, names in msprobe's spelling where
// a side is an msprobe dump (RecordSource::native_info), parity's otherwise. `golden`/`target` are the
// sources the result was compared from. The CSV as msprobe's compare_result_*.csv; errors name nothing
// (the caller's write_output names the file).
Status write_msprobe_csv(const CompareResult& result, const RecordSource& golden, const RecordSource& target,
                         std::FILE* out);
// The same table as msprobe's compare_result_*.xlsx (sheet "Sheet1"), written beside `path` and renamed
// onto it when complete. Errors name the file.
Status write_msprobe_xlsx(const CompareResult& result, const RecordSource& golden, const RecordSource& target,
                          const std::string& path);

// ---- terminal ------------------------------------------------------------------------------------
enum class SortKey { kWorst, kName, kOrder, kMetric };

struct TableOptions {
  SortKey sort = SortKey::kWorst;
  std::string sort_metric = "cosine";  // with SortKey::kMetric: cosine | max_abs | max_rel | rel_l2 | sqnr_db | kl
  int64_t limit = 30;                  // rows shown; <= 0 = all
  int width = 100;                     // columns available
  bool color = false;
  bool verbose = false;                // print the reason of passing rows too
  bool full_names = false;             // --wide: names never shortened (the name column takes the longest)
};

// Row indices in display order.
std::vector<size_t> sort_rows(const CompareResult& result, const TableOptions& options);
// Metric names accepted by --sort-metric.
const std::vector<std::string>& sortable_metrics();

void print_compare_header(std::FILE* out, const CompareResult& result, const TableOptions& options);
void print_compare_table(std::FILE* out, const CompareResult& result, const TableOptions& options);
void print_compare_unmatched(std::FILE* out, const CompareResult& result, const TableOptions& options);
void print_compare_problems(std::FILE* out, const CompareResult& result, const TableOptions& options);
void print_compare_notes(std::FILE* out, const CompareResult& result, const TableOptions& options);
// "Shards of failing rows": for rows whose record the run held apart (--layout), each part's rel L2, the
// worst first (CompareReport::shards; at most options.limit rows, all with 0).
void print_compare_shards(std::FILE* out, const CompareReport& report, const TableOptions& options);
// "PASSED | 12 pass, 0 warn, 0 fail, 0 error | noise-model | 0.41 s | parity compare a b" (Polygraphy
// style); `gate_passed` is whether the exit code is 0; `no_input`: nothing could be compared ("NO INPUT").
// Under several processes (mpirun): one line with each process's peak resident memory, in MiB. Prints
// nothing for a single process (its JSON still carries it).
void print_process_memory(std::FILE* out, const CompareResult& result, bool color);
// The last line: `headline` (run_headline, parity/compare_runs.h) | counts | policy | time | command.
void print_compare_verdict(std::FILE* out, const CompareResult& result, double seconds,
                           const std::string& command, std::string_view headline, bool color);

}  // namespace parity::report
