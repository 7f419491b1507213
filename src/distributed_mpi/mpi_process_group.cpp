// MpiProcessGroup: ProcessGroup over MPI_COMM_WORLD (src/distributed_mpi/mpi_process_group.h).
#include "distributed_mpi/mpi_process_group.h"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace parity {

namespace {

// Messages go point to point in pieces of at most 1 GiB: MPI counts are ints, and a gather of 100,000
// compared rows is tens of megabytes, more with long reasons.
constexpr int64_t kPiece = int64_t{1} << 30;
constexpr int kTagSize = 1, kTagBytes = 2;

// Test hook (docs/cli.md "MPI", tests/python/test_mpi_compare.py): PARITY_TEST_KILL_RANK=<k> makes
// process k kill itself with SIGKILL when it reaches its first gather — after measuring its share,
// before process 0 has anything to write — so the test can check that a dead process fails the
// command and leaves no partial output. Read only here; no other code path looks at it.
void test_hook_die_before_gather(int rank) {
  const char* v = std::getenv("PARITY_TEST_KILL_RANK");
  if (v != nullptr && *v != '\0' && std::atoi(v) == rank) std::raise(SIGKILL);
}

class MpiProcessGroup final : public ProcessGroup {
 public:
  MpiProcessGroup() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiProcessGroup() override { MPI_Finalize(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  // On the wire, per message: its size (int64, tag kTagSize), then its bytes in pieces (tag kTagBytes);
  // after a process's last message, the size -1.
  Status gather_each(const std::function<bool(std::string&)>& next,
                     const std::function<Status(int, std::string&)>& consume) const override {
    test_hook_die_before_gather(rank_);
    if (rank_ != 0) {
      std::string message;
      bool more = true;
      while (more) {
        more = next(message);
        int64_t n = more ? static_cast<int64_t>(message.size()) : -1;
        if (MPI_Send(&n, 1, MPI_INT64_T, 0, kTagSize, MPI_COMM_WORLD) != MPI_SUCCESS)
          return Status::IOError("MPI: cannot send to process 0");
        for (int64_t off = 0; off < n; off += kPiece) {
          const int count = static_cast<int>(std::min(kPiece, n - off));
          if (MPI_Send(message.data() + off, count, MPI_BYTE, 0, kTagBytes, MPI_COMM_WORLD) != MPI_SUCCESS)
            return Status::IOError("MPI: cannot send to process 0");
        }
      }
      return Status::OK();
    }
    Status first_error = Status::OK();
    std::string message;
    for (int from = 1; from < size_; ++from) {  // in rank order: the result does not depend on timing
      for (;;) {
        int64_t n = 0;
        if (MPI_Recv(&n, 1, MPI_INT64_T, from, kTagSize, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
          return Status::IOError("MPI: cannot receive from process " + std::to_string(from));
        if (n < 0) break;
        message.resize(static_cast<size_t>(n));
        for (int64_t off = 0; off < n; off += kPiece) {
          const int count = static_cast<int>(std::min(kPiece, n - off));
          if (MPI_Recv(message.data() + off, count, MPI_BYTE, from, kTagBytes, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
              MPI_SUCCESS)
            return Status::IOError("MPI: cannot receive from process " + std::to_string(from));
        }
        if (first_error.ok()) first_error = consume(from, message);
      }
    }
    return first_error;
  }

  int broadcast(int value) const override {
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return value;
  }

  [[noreturn]] void abort(const std::string& message, int code) const override {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
  }

 private:
  int rank_ = 0, size_ = 1;
};

// Processes sharing this node (MPI-3 shared-memory split).
int processes_on_this_node() {
  MPI_Comm node;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return 1;
  int n = 1;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return std::max(n, 1);
}

void set_thread_share() {
  const int local = processes_on_this_node();  // collective: every process calls it
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return;  // the user's choice stands
  const int usable = omp_get_num_procs();  // the CPUs this process may run on (its binding)
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Bound by the launcher (fewer usable CPUs than the machine has): its share is that binding already.
  const int threads = usable < machine ? usable : usable / local;
  omp_set_num_threads(std::max(1, threads));
}

}  // namespace

Result<std::unique_ptr<ProcessGroup>> start_mpi_process_group(int* argc, char*** argv) {
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return Status::IOError("MPI_Init failed");
  auto group = std::make_unique<MpiProcessGroup>();
  set_thread_share();
  return std::unique_ptr<ProcessGroup>(std::move(group));
}

}  // namespace parity
