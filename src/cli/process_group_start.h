// Whether this `parity` runs as one process of an MPI job (docs/cli.md "MPI").
#pragma once

#include <memory>

#include "parity/process_group.h"

namespace parity::cli {

// The MPI group when an MPI launcher started this process (detect_mpi_launcher), else nullptr: a plain
// `parity ...` never initialises MPI. Under a launcher, a tool built without MPI (PARITY_MPI=OFF) says
// so and exits 2: N copies each doing the whole job and writing the same files would be worse.
std::unique_ptr<ProcessGroup> start_process_group(int* argc, char*** argv);

}  // namespace parity::cli
