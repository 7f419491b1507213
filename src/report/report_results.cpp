// load_results_for_report (parity/html_report.h): the saved results `parity report` draws, read one by one
// as the report embeds them; an unreadable file is named and left out, never the end of the report.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "parity/html_report.h"

namespace parity {

std::vector<ReportInput> ReportResults::inputs() const {
  std::vector<ReportInput> out;
  for (size_t i = 0; i < documents.size(); ++i) out.push_back({origins[i], &documents[i]});
  return out;
}

ReportResults load_results_for_report(const std::vector<std::string>& paths, size_t max_rows,
                                      ProgressSink* progress) {
  std::error_code ec;
  int64_t total = 0;
  for (const std::string& path : paths) {
    const auto n = std::filesystem::file_size(path, ec);
    if (!ec) total += static_cast<int64_t>(n);
  }
  if (progress) progress->begin("reading results", total, "B");
  ReportResults out;
  for (const std::string& path : paths) {
    const auto size = std::filesystem::file_size(path, ec);
    // Streamed: a comparison keeps only the rows the report shows, so memory does not grow with the file.
    Result<nlohmann::json> doc = load_result_for_report(path, max_rows);
    if (progress && !ec) progress->advance(static_cast<int64_t>(size));
    if (!doc.ok()) {
      out.unreadable.push_back(doc.status());
      continue;
    }
    out.documents.push_back(std::move(doc).value());
    out.origins.push_back(path);
  }
  if (progress) progress->end();
  return out;
}

}  // namespace parity
