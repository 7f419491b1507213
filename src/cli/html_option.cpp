#include "parity/terminal_text.h"
#include "cli/html_option.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "parity/html_report.h"

#ifndef PARITY_VERSION
#define PARITY_VERSION "0.0.0"
#endif

namespace parity::cli {

void add_html_option(CLI::App& sub, std::string& path) {
  sub.add_option("--html", path,
                 "Write a self-contained HTML report of the result (charts, tables; opens offline; docs/report.md)");
}

bool write_html_option(const std::string& path, const nlohmann::json& result, const char* command,
                       const GlobalOptions& global) {
  HtmlReportOptions options;
  options.generated_by = std::string("parity ") + PARITY_VERSION + " " + command;
  Status st = write_html_report(path, std::vector<ReportInput>{{"", &result}}, options);
  if (!st.ok()) {
    std::fprintf(stderr, "parity %s: %s\n", command, terminal_text(st.message()).c_str());
    return false;
  }
  if (!global.quiet) std::fprintf(stderr, "report: %s\n", path.c_str());
  return true;
}

bool write_html_option(const std::string& path, const std::string& json_text, const char* command,
                       const GlobalOptions& global) {
  nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  // The text is the command's own output: unparsable JSON here is a bug in parity, not user input.
  if (doc.is_discarded()) {
    std::fprintf(stderr, "parity %s: internal error: its JSON result does not parse; no report written\n", command);
    return false;
  }
  return write_html_option(path, doc, command, global);
}

}  // namespace parity::cli
