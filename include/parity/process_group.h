// parity/process_group.h — the processes that cooperate on one command (issue 13, docs/cli.md "MPI").
//
// `parity compare` and `parity overflow` started by an MPI launcher (mpirun, srun) run as N processes:
// each measures its byte-balanced share of the rows and sends the compact results to process 0, which
// runs the rest of the pipeline and renders. A ProcessGroup is that group seen from one process. The
// library's pipelines take a `const ProcessGroup*` (nullptr = this process alone); the MPI
// implementation lives outside the library (src/distributed_mpi/, linked into the `parity` tool only),
// so neither libparity nor the Python extension depends on an MPI library.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <string_view>
#include <vector>

#include "parity/status.h"

namespace parity {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;  // 0 ..size()-1; process 0 produces every output
  virtual int size() const = 0;
  bool is_root() const { return rank() == 0; }

  // Collective: every process but 0 sends a sequence of messages — `next` writes the next one into its
  // argument and returns true, or returns false when there are no more — and process 0 receives them
  // process by process, in rank order, handing each to `consume(from, message)` as it arrives: it holds
  // one message at a time, however many processes send (a thousand processes' rows would not fit at
  // once). Process 0's `next` and the others' `consume` are never called. An error when the transport
  // fails, or the first error `consume` returned (the messages after it are still received, and dropped,
  // so that no sender is left blocked).
  virtual Status gather_each(const std::function<bool(std::string&)>& next,
                             const std::function<Status(int from, std::string& message)>& consume) const = 0;

  // Collective: gather_each with one message a process, the one `make()` returns (not called on process 0).
  Status gather_one_each(const std::function<std::string()>& make,
                         const std::function<Status(int from, std::string& message)>& consume) const;

  // Collective, for small messages: every process passes its bytes; process 0 gets all of them in rank
  // order (its own first), every other process an empty vector.
  Result<std::vector<std::string>> gather(std::string_view bytes) const;
  // Collective: process 0's value, on every process.
  virtual int broadcast(int value) const = 0;
  // Ends every process of the group now: `message` on stderr, exit status `code`. Never returns.
  [[noreturn]] virtual void abort(const std::string& message, int code) const = 0;
};

// The group of this process alone (no MPI): gather returns {bytes}, broadcast returns its argument.
const ProcessGroup& single_process_group();

// More than one process shares the work (nullptr counts as one).
inline bool is_distributed(const ProcessGroup* group) { return group != nullptr && group->size() > 1; }
// This process renders the outputs (true when alone).
inline bool is_output_process(const ProcessGroup* group) { return group == nullptr || group->is_root(); }

// Which launcher started this process, read from the environment it sets before exec: "mpirun"
// (Open MPI: OMPI_COMM_WORLD_SIZE; PMIx: PMIX_RANK), "mpiexec" (MPICH/Hydra: PMI_SIZE / PMI_RANK),
// "srun" (SLURM_PROCID with SLURM_NTASKS > 1). "" when none: a plain `parity compare` never
// initialises MPI.
std::string detect_mpi_launcher();

// Splits items of the given byte sizes into `parts` contiguous ranges of about equal bytes: item i goes
// to the part holding the midpoint of its bytes on the cumulative axis. Deterministic, owners are
// non-decreasing, and no part exceeds total/parts by more than one item's bytes. Items of zero bytes
// count as one byte (each still costs an open and a header). Returns the owner of each item.
std::vector<int> partition_by_bytes(const std::vector<int64_t>& bytes, int parts);

// ---- the bytes a process sends to process 0 ------------------------------------------------------------
// Processes of one group run the same binary on the same architecture (the launcher starts one
// executable), so measurement structs that are trivially copyable travel as their bytes; each message
// starts with a header naming its kind and those structs' sizes, so a mismatch is an error, not garbage.
class WireWriter {
 public:
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void u8(uint8_t v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>, "only trivially copyable structs travel as bytes");
    raw(&v, sizeof v);
  }
  std::string take() { return std::move(out_); }

 private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

// Reads what a WireWriter wrote; every read past the end fails (ok() turns false, values are zero).
class WireReader {
 public:
  explicit WireReader(std::string_view in) : in_(in) {}
  uint64_t u64() {
    uint64_t v = 0;
    raw(&v, sizeof v);
    return v;
  }
  uint8_t u8() {
    uint8_t v = 0;
    raw(&v, sizeof v);
    return v;
  }
  std::string str() {
    const uint64_t n = u64();
    if (!ok_ || n > in_.size() - pos_) return fail(), std::string();
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  template <typename T>
  T pod() {
    static_assert(std::is_trivially_copyable_v<T>, "only trivially copyable structs travel as bytes");
    T v{};
    raw(&v, sizeof v);
    return v;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }

 private:
  void fail() { ok_ = false; }
  void raw(void* p, size_t n) {
    if (!ok_ || n > in_.size() - pos_) return fail();
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace parity
