// parity report RESULT.json... -o report.html — one self-contained HTML report from saved results.
// Parses options, loads the results streamed (load_result_for_report), calls write_html_report, prints the path.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
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
    std::vector<nlohmann::json> docs;
    std::vector<std::string> origins;
    int skipped = 0;
    // Large results (a 100,000-event comparison is ~150 MB) take seconds to read: a progress bar on a
    // terminal (nothing in pipes, CI or under --quiet).
    std::unique_ptr<ProgressSink> progress = make_progress(global);
    std::error_code ec;
    int64_t total = 0;
    for (const std::string& path : o->inputs) {
      const auto n = std::filesystem::file_size(path, ec);
      if (!ec) total += static_cast<int64_t>(n);
    }
    if (progress) progress->begin("reading results", total, "B");
    for (const std::string& path : o->inputs) {
      const auto size = std::filesystem::file_size(path, ec);
      // Streamed: a comparison keeps only the rows the report shows, so memory does not grow with the file.
      Result<nlohmann::json> doc = load_result_for_report(path, opts.max_rows);
      if (progress && !ec) progress->advance(static_cast<int64_t>(size));
      if (!doc.ok()) {
        std::fprintf(stderr, "parity report: %s\n", terminal_text(doc.status().message()).c_str());
        ++skipped;
        continue;
      }
      docs.push_back(std::move(doc).value());
      origins.push_back(path);
    }
    if (progress) progress->end();
    if (docs.empty()) {
      std::fprintf(stderr, "parity report: no usable result among %zu file(s); nothing written\n", o->inputs.size());
      return kExitUsage;
    }
    std::vector<ReportInput> inputs;
    for (size_t i = 0; i < docs.size(); ++i) inputs.push_back({origins[i], &docs[i]});
    opts.generated_by = std::string("parity ") + PARITY_VERSION + " report";
    for (const std::string& p : origins) opts.generated_by += " " + p;
    Status st = write_html_report(o->output, inputs, opts);
    if (!st.ok()) {
      std::fprintf(stderr, "parity report: %s\n", terminal_text(st.message()).c_str());
      return st.code() == StatusCode::kInternal ? kExitInternal : kExitUsage;
    }
    if (!global.quiet) {
      const bool color = use_color(global, 1);
      std::printf("%s %s (%zu result%s%s)\n", style("report", "1", color).c_str(), o->output.c_str(), docs.size(),
                  docs.size() == 1 ? "" : "s",
                  skipped ? (", " + std::to_string(skipped) + " unreadable skipped").c_str() : "");
    }
    return skipped ? kExitDifferences : kExitOk;
  };
}

}  // namespace parity::cli
