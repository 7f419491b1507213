// src/cli/output.h — writing a command's machine-readable output, shared by every subcommand.
#pragma once

#include <string>

#include "parity/status.h"

namespace parity::cli {

// Write `text` to the file `path`, or to stdout when path is "-". Truncates an existing file (result
// files are outputs the user named, never captured data). Errors name the path.
Status write_output(const std::string& path, const std::string& text);

}  // namespace parity::cli
