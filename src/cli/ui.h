// src/cli/ui.h — terminal presentation shared by every subcommand: colour, width, progress bars.
// Colour: --color always|never, or auto = stdout is a terminal, TERM is not "dumb" and NO_COLOR is unset
// (https://no-color.org). Progress bars go to stderr only when it is a terminal and --quiet is off.
#pragma once

#include <memory>
#include <string>

#include "cli/command.h"
#include "parity/compare.h"
#include "parity/progress.h"

namespace parity::cli {

// Whether to colour output written to a stream with file descriptor `fd` (1 = stdout).
bool use_color(const GlobalOptions& global, int fd = 1);
// Columns of the terminal on stdout, or 100 when it is not a terminal (summaries fit 100 columns).
int terminal_width();

// ANSI colouring of a verdict word; plain text when `color` is false.
std::string colorize_verdict(const std::string& text, Verdict v, bool color);
// Generic SGR wrappers: bold, dim, red, yellow, green.
std::string style(const std::string& text, const char* sgr, bool color);

// A progress bar on stderr with rate and ETA, or nullptr when stderr is not a terminal or --quiet.
std::unique_ptr<ProgressSink> make_progress(const GlobalOptions& global);

// Under mpirun (global.group): did every process open the command's inputs? Process 0's outcome decides
// for all (false: it could not, and its own message says why); a process that could not while process 0
// could ends the whole job with its message (exit 2), since the others would wait for it forever.
// Alone: here.ok().
bool opened_everywhere(const GlobalOptions& global, const Status& here, const char* command);

}  // namespace parity::cli
