// parity report RESULT.json... -o report.html — one self-contained HTML report from saved results.
// Parse, call, print: load_results_for_report reads the results (streamed, an unreadable one named and left
// out), write_html_report writes the page; this prints what was left out and the path.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "parity/terminal_text.h"
#include "cli/command.h"
#include "cli/ui.h"
#include "parity/html_report.h"

#ifndef PARITY_VERSION
#define PARITY_VERSION "0.0.0"
#endif

namespace parity::cli {

CommandAction setup_report(CLI::App& sub, const GlobalOptions& global) {
  struct Opts {
    std::vector<std::string> inputs;
    std::string output = "report.html";
    std::string title;
    size_t max_rows = HtmlReportOptions{}.max_rows;
  };
  auto o = std::make_shared<Opts>();
  sub.add_option("results", o->inputs,
                 "JSON results written by parity commands with --json (compare, overflow, curve, ranks, eval)")
      ->required();
  sub.add_option("-o,--output", o->output, "HTML file to write")->capture_default_str();
  sub.add_option("--title", o->title, "Page title (default: from the verdict)");
  sub.add_option("--max-rows", o->max_rows,
                 "Rows of a comparison the page embeds whole, for the events table (the worst; 0 = every row, "
                 "a larger page). The model tree covers every row whatever the cap")
      ->capture_default_str();
  sub.footer(
      "The report is one file with its charting library, script and data inlined: it opens offline and\n"
      "makes no network request. Each section is drawn when the results hold its data (docs/report.md).");

  return [o, &global]() -> int {
    // One unreadable result never stops the report: it is named on stderr and the rest is drawn.
    HtmlReportOptions opts;
    opts.title = o->title;
    opts.max_rows = o->max_rows;
    // Large results take seconds to read: a progress bar on a terminal (nothing in pipes, CI or under --quiet).
    std::unique_ptr<ProgressSink> progress = make_progress(global);
    const ReportResults results = load_results_for_report(o->inputs, opts.max_rows, progress.get());
    for (const Status& st : results.unreadable)
      std::fprintf(stderr, "parity report: %s\n", terminal_text(st.message()).c_str());
    const size_t skipped = results.unreadable.size();
    if (results.documents.empty()) {
      std::fprintf(stderr, "parity report: no usable result among %zu file(s); nothing written\n", o->inputs.size());
      return kExitUsage;
    }
    opts.generated_by = std::string("parity ") + PARITY_VERSION + " report";
    for (const std::string& p : results.origins) opts.generated_by += " " + p;
    Status st = write_html_report(o->output, results.inputs(), opts);
    if (!st.ok()) {
      std::fprintf(stderr, "parity report: %s\n", terminal_text(st.message()).c_str());
      return st.code() == StatusCode::kInternal ? kExitInternal : kExitUsage;
    }
    if (!global.quiet) {
      const bool color = use_color(global, 1);
      std::printf("%s %s (%zu result%s%s)\n", style("report", "1", color).c_str(), o->output.c_str(),
                  results.documents.size(), results.documents.size() == 1 ? "" : "s",
                  skipped ? (", " + std::to_string(skipped) + " unreadable skipped").c_str() : "");
    }
    return skipped ? kExitDifferences : kExitOk;
  };
}

}  // namespace parity::cli
