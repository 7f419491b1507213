// parity — is the target run numerically equivalent to the golden run?
// The entry point: global options, the subcommand table, and the one place where errors become exit codes.
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/output.h"
#include "cli/process_group_start.h"
#include "cli/suggest.h"

#ifndef PARITY_VERSION
#define PARITY_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
  using namespace parity::cli;
  using parity::kExitOk, parity::kExitUsage, parity::kExitInternal;
  CLI::App app{"parity: find whether, where and why a target run departs from its golden run"};
  app.set_version_flag("--version", std::string("parity ") + PARITY_VERSION);
  app.require_subcommand(1);
  app.fallthrough();

  GlobalOptions global;
  app.add_option("--color", global.color, "Colour verdicts: auto (terminal, honours NO_COLOR), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_flag("-q,--quiet", global.quiet, "Print only errors and the final verdict line");
  app.add_flag("-v,--verbose", global.verbose, "Print more detail (every row, timings)");

  CommandAction action;
  const Command* chosen = nullptr;
  for (const Command& c : commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    CommandAction a = c.setup(*sub, global);
    sub->callback([&action, &chosen, &c, a, sub] {
      // Two outputs naming one file: the second would silently replace the first (a usage error, exit 2).
      if (parity::Status st = distinct_outputs(output_files(*sub)); !st.ok()) throw CLI::ValidationError(st.message());
      action = a;
      chosen = &c;
    });
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // The guess first: it is what the user needs, before CLI11's "A subcommand is required".
    if (e.get_exit_code() != 0) print_did_you_mean(app, argc, argv);
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (!action) return kExitUsage;
  // Under mpirun: MPI starts only now that the command line parsed (--help, a typo: no MPI at all).
  const std::unique_ptr<parity::ProcessGroup> group = start_process_group(&argc, &argv);
  global.group = group.get();
  int code = kExitOk;
  if (group && !group->is_root() && chosen->under_mpi == UnderMpi::kProcessZeroAlone) {
    // process 0 runs this command alone; this one only takes its exit status below
  } else {
    try {
      code = action();
    } catch (const std::exception& e) {
      // One process failing alone would leave the others waiting in a collective: end them all.
      if (parity::is_distributed(group.get()))
        group->abort("parity: process " + std::to_string(group->rank()) + ": internal error: " + e.what(), kExitInternal);
      std::fprintf(stderr, "parity: internal error: %s\n", e.what());
      code = kExitInternal;
    }
  }
  // Every process exits with process 0's status, so mpirun's status is the command's.
  return group ? group->broadcast(code) : code;
}
