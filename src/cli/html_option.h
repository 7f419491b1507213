// src/cli/html_option.h — the `--html FILE` option every result-producing command shares: the command's
// JSON result written as one self-contained HTML report (parity/html_report.h, docs/report.md).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "cli/command.h"

namespace parity::cli {

// Declares --html on `sub`, storing the path in `path`.
void add_html_option(CLI::App& sub, std::string& path);

// Writes the report of `result` (a parity.<command>/N document, as JSON text or object) to `path` and
// names it on stderr unless --quiet. On failure prints "parity <command>: <problem>" and returns false.
bool write_html_option(const std::string& path, const nlohmann::json& result, const char* command,
                       const GlobalOptions& global);
bool write_html_option(const std::string& path, const std::string& json_text, const char* command,
                       const GlobalOptions& global);

}  // namespace parity::cli
