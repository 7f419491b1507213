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
#include "parity/process_group.h"

namespace parity::cli {

// Options shared by every subcommand, declared once in main.cpp.
struct GlobalOptions {
  std::string color = "auto";  // auto | always | never (NO_COLOR honoured under auto)
  bool quiet = false;
  bool verbose = false;
  // The processes of an MPI job (mpirun -n N parity ...), set before the action runs; nullptr = alone.
  const ProcessGroup* group = nullptr;
};

// How a subcommand runs under mpirun (docs/cli.md "MPI"): every process takes a share of the work and
// process 0 renders (cooperative), or process 0 does it all while the others wait for its exit status.
enum class UnderMpi { kProcessZeroAlone, kCooperative };

// Declares the subcommand's options on `sub`; returns the action run after a successful parse.
using CommandAction = std::function<int()>;
using CommandSetup = CommandAction (*)(CLI::App& sub, const GlobalOptions& global);

struct Command {
  const char* name;
  const char* summary;
  CommandSetup setup;
  UnderMpi under_mpi = UnderMpi::kProcessZeroAlone;
};

// All subcommands, in the order `parity --help` lists them (commands.cpp).
const std::vector<Command>& commands();

}  // namespace parity::cli
