// src/cli/output.h — writing a command's machine-readable output, shared by every subcommand.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "parity/status.h"

namespace parity::cli {

// Write `text` to the file `path`, or to stdout when path is "-". Replaces an existing file (result
// files are outputs the user named, never captured data) by writing beside it and renaming, so a reader
// or a killed run never leaves half a file; FIFOs, devices and links are written in place. Errors name
// the path.
Status write_output(const std::string& path, const std::string& text);
// The same for a writer that streams into a FILE* (stdout when path is "-"); its error is returned,
// and a failed write or close of the file names the path.
Status write_output(const std::string& path, const std::function<Status(std::FILE*)>& write);

// A usage error when two of a command's outputs ({option, path}; empty and "-" ignored) name the same
// file — the second would silently replace the first: "--csv and --arrow both write out.dat".
Status distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);
// The files a parsed subcommand's output options (--json, --csv, --arrow, --html) name, as {option, path}.
std::vector<std::pair<std::string, std::string>> output_files(const CLI::App& sub);

}  // namespace parity::cli
