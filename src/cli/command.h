// src/cli/command.h — how a subcommand plugs into the `parity` tool.
//
// A subcommand is one file src/cli/cmd_<name>.cpp defining `CommandSetup setup_<name>` and one line in
// src/cli/commands.cpp. The file only declares options, calls the library, and renders: no maths here.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "parity/exit_codes.h"  // kExitOk, kExitDifferences, kExitUsage, kExitInternal

namespace parity::cli {

// Options shared by every subcommand, declared once in main.cpp.
struct GlobalOptions {
  std::string color = "auto";  // auto | always | never (NO_COLOR honoured under auto)
  bool quiet = false;
  bool verbose = false;
};

// Declares the subcommand's options on `sub`; returns the action run after a successful parse.
using CommandAction = std::function<int()>;
using CommandSetup = CommandAction (*)(CLI::App& sub, const GlobalOptions& global);

struct Command {
  const char* name;
  const char* summary;
  CommandSetup setup;
};

// All subcommands, in the order `parity --help` lists them (commands.cpp).
const std::vector<Command>& commands();

}  // namespace parity::cli
