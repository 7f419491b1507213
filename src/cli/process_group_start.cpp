// start_process_group (cli/process_group_start.h).
#include "cli/process_group_start.h"

#include <cstdio>
#include <cstdlib>

#include "parity/exit_codes.h"

#ifdef PARITY_HAVE_MPI
#include "distributed_mpi/mpi_process_group.h"
#endif

namespace parity::cli {

std::unique_ptr<ProcessGroup> start_process_group(int* argc, char*** argv) {
  const std::string launcher = detect_mpi_launcher();
  if (launcher.empty()) return nullptr;
#ifdef PARITY_HAVE_MPI
  Result<std::unique_ptr<ProcessGroup>> group = start_mpi_process_group(argc, argv);
  if (group.ok()) return std::move(group).value();
  std::fprintf(stderr, "parity: started by %s, but %s\n", launcher.c_str(), group.status().message().c_str());
#else
  std::fprintf(stderr,
               "parity: started by %s, but this parity was built without MPI (PARITY_MPI=OFF): run it without "
               "%s, or rebuild with libopenmpi-dev installed (README \"MPI\")\n",
               launcher.c_str(), launcher.c_str());
#endif
  std::exit(kExitUsage);
}

}  // namespace parity::cli
