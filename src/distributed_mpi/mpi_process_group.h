// The MPI process group (parity/process_group.h), compiled when PARITY_MPI is on (CMakeLists.txt) and
// linked into the `parity` tool only: the library and the Python extension never depend on MPI.
#pragma once

#include <memory>

#include "parity/process_group.h"

namespace parity {

// Initialises MPI (MPI_Init_thread, funneled: only the main thread communicates) and returns the group
// of MPI_COMM_WORLD; MPI_Finalize runs when it is destroyed. Call it only when detect_mpi_launcher()
// names a launcher. Unless OMP_NUM_THREADS is set, each process gets the cores it can run on divided by
// the processes on its node, so N processes on one machine do not start N × cores threads.
Result<std::unique_ptr<ProcessGroup>> start_mpi_process_group(int* argc, char*** argv);

}  // namespace parity
