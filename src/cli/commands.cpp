// The subcommand registry: one line per subcommand. Adding a subcommand = src/cli/cmd_<name>.cpp that
// defines `CommandAction setup_<name>(CLI::App&, const GlobalOptions&)`, plus its line here.
#include "cli/command.h"

namespace parity::cli {


const std::vector<Command>& commands() {
  static const std::vector<Command> all = {
  };
  return all;
}

}  // namespace parity::cli
