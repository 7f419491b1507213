// The single-process group, launcher detection and the byte-balanced partition (parity/process_group.h).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "parity/process_group.h"

namespace parity {

namespace {

class SingleProcessGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status gather_each(const std::function<bool(std::string&)>&,
                     const std::function<Status(int, std::string&)>&) const override {
    return Status::OK();  // nobody else sends
  }
  int broadcast(int value) const override { return value; }
  [[noreturn]] void abort(const std::string& message, int code) const override {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::exit(code);
  }
};

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

}  // namespace

Status ProcessGroup::gather_one_each(const std::function<std::string()>& make,
                                     const std::function<Status(int, std::string&)>& consume) const {
  bool sent = false;
  auto next = [&](std::string& message) {
    if (sent) return false;
    message = make();
    sent = true;
    return true;
  };
  return gather_each(next, consume);
}

Result<std::vector<std::string>> ProcessGroup::gather(std::string_view bytes) const {
  std::vector<std::string> all;
  if (is_root()) {
    all.assign(static_cast<size_t>(size()), std::string());
    all[0] = std::string(bytes);
  }
  Status st = gather_one_each([&] { return std::string(bytes); }, [&](int from, std::string& message) {
    all[static_cast<size_t>(from)] = std::move(message);
    return Status::OK();
  });
  if (!st.ok()) return st;
  return all;
}

const ProcessGroup& single_process_group() {
  static const SingleProcessGroup group;
  return group;
}

std::string detect_mpi_launcher() {
  if (env_set("OMPI_COMM_WORLD_SIZE") || env_set("PMIX_RANK")) return "mpirun";
  if (env_set("PMI_SIZE") || env_set("PMI_RANK")) return "mpiexec";
  // srun sets SLURM_PROCID for a single task too (and sbatch for its batch script): only several tasks
  // make a group.
  const char* ntasks = std::getenv("SLURM_NTASKS");
  if (env_set("SLURM_PROCID") && ntasks != nullptr && std::atoi(ntasks) > 1 && env_set("SLURM_STEP_ID"))
    return "srun";
  return "";
}

std::vector<int> partition_by_bytes(const std::vector<int64_t>& bytes, int parts) {
  std::vector<int> owner(bytes.size(), 0);
  if (parts <= 1 || bytes.empty()) return owner;
  // Long double: the midpoint arithmetic stays exact for totals far beyond a petabyte.
  long double total = 0;
  for (int64_t b : bytes) total += static_cast<long double>(b > 0 ? b : 1);
  long double before = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const long double b = static_cast<long double>(bytes[i] > 0 ? bytes[i] : 1);
    const long double mid = before + b / 2;
    int p = static_cast<int>(mid * parts / total);
    owner[i] = p < 0 ? 0 : p >= parts ? parts - 1 : p;
    before += b;
  }
  return owner;
}

}  // namespace parity
