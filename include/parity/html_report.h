// parity/html_report.h — one self-contained HTML file from the JSON results of parity's commands.
//
// The report is built from the same JSON documents the commands write with --json ("parity.compare/1",
// "parity.overflow/1", "parity.curve/1", "parity.ranks/1", "parity.eval.ppl/1", ...), so a report can be
// regenerated from saved results. Everything is inlined: the charting library, the report's script and
// style, and the data. Nothing is fetched when the file is opened. Each section is drawn only when its
// data is present. Layout, sections and the data envelope: docs/report.md.
//
// Escaping: the data travels as JSON inside <script type="application/json">, with '<', '>', '&',
// U+2028 and U+2029 written as \u escapes, so no string from a dump can close the script element; the
// page's script renders every string with textContent, never as HTML.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "parity/compare_runs.h"
#include "parity/progress.h"
#include "parity/status.h"

namespace parity {

// One input of a report: a result document and where it came from (shown in the report; "" if built
// in memory).
struct ReportInput {
  std::string origin;          // file path of the saved result, or "" for results computed in-process
  const nlohmann::json* result = nullptr;  // must outlive the call; an object with a "schema" string
};

struct HtmlReportOptions {
  std::string title;           // page title; "" = derived from the inputs ("parity report: <verdict>")
  std::string generated_by;    // "parity 0.1.0 report a.json b.json"; shown in the footer
  // A compare result with more rows embeds only the worst `max_rows` (verdict, then noise ratio; the first
  // divergence always), in execution order, with "report_rows" {shown, total, rule} and a note saying so:
  // the page stays small enough to open (100,000 rows were 135 MB). 0 = every row.
  size_t max_rows = 5000;
};

// The parity.compare/1 document of `report` as a report embeds it: with more rows than
// options.max_rows, only the rows the report would keep (the same rule and note as for a saved result),
// chosen before any row is serialized, so a million-row compare never builds a million-row tree.
nlohmann::json compare_report_for_html(const CompareReport& report, const HtmlReportOptions& options = {});

// Read a result file written by a parity command; errors name the file and the problem. Only a regular
// file is opened (a FIFO would block); the text is parsed as it is read, never held whole, and nesting
// deeper than kMaxJsonDepth (parity/json_depth.h) is refused.
Result<nlohmann::json> load_result_json(const std::string& path);

// The same, read as a report with `max_rows` (HtmlReportOptions::max_rows) embeds it: a parity.compare
// result with more rows keeps only the rows the report shows, with "report_rows" and the note, exactly what
// render_html_report makes of the whole document. The rows are built one at a time and only the kept ones
// stay, so memory is bounded by max_rows and the rest of the document, not by the file's size. A result
// whose first_divergence (or schema) follows its rows in the file may be read twice. 0 = every row.
Result<nlohmann::json> load_result_for_report(const std::string& path, size_t max_rows);

// The result files of `parity report`, read as a report embeds them (load_result_for_report), in the order
// given. A file that cannot be read never stops the others: its error, naming it, is in `unreadable`.
struct ReportResults {
  std::vector<std::string> origins;        // the path of each result read
  std::vector<nlohmann::json> documents;   // documents[i] was read from origins[i]
  std::vector<Status> unreadable;          // one per file left out
  std::vector<ReportInput> inputs() const;  // {origins[i], &documents[i]}: what write_html_report takes
};
// `progress`, when given, advances by each file's size ("reading results", in bytes): a 100,000-event
// comparison is ~150 MB and takes seconds.
ReportResults load_results_for_report(const std::vector<std::string>& paths, size_t max_rows,
                                      ProgressSink* progress = nullptr);

// Check that `result` is something a report can show: an object with a "schema" string "parity.<x>/<n>".
Status validate_result(const nlohmann::json& result);

// The report as one HTML text.
Result<std::string> render_html_report(const std::vector<ReportInput>& inputs,
                                       const HtmlReportOptions& options = {});

// The one call the commands use for --html FILE: render and write (atomically: a temporary file next to
// `path`, renamed into place).
Status write_html_report(const std::string& path, const std::vector<nlohmann::json>& results,
                         const HtmlReportOptions& options = {});
Status write_html_report(const std::string& path, const std::vector<ReportInput>& inputs,
                         const HtmlReportOptions& options = {});

// JSON text made safe to sit inside <script type="application/json">: '<' '>' '&' U+2028 U+2029 become
// \u003c \u003e \u0026 \u2028 \u2029. The input must be JSON text (the escapes are only valid inside
// JSON strings, which is the only place these characters can occur in JSON).
std::string escape_json_for_script(std::string_view json_text);

}  // namespace parity
