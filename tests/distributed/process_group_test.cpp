// The byte-balanced partition of work between the processes of an MPI job, the wire helpers and the
// single-process group (parity/process_group.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>

#include "parity/process_group.h"

namespace parity {
namespace {

// Bytes each part receives.
std::vector<int64_t> part_bytes(const std::vector<int64_t>& bytes, const std::vector<int>& owner, int parts) {
  std::vector<int64_t> sums(static_cast<size_t>(parts), 0);
  for (size_t i = 0; i < bytes.size(); ++i) sums[static_cast<size_t>(owner[i])] += std::max<int64_t>(bytes[i], 1);
  return sums;
}

TEST(PartitionByBytes, ContiguousAndBalancedByBytesNotCounts) {
  // One big item then many small ones: by counts, part 0 would get the big one and half the rest.
  std::vector<int64_t> bytes = {1000};
  for (int i = 0; i < 100; ++i) bytes.push_back(10);
  const std::vector<int> owner = partition_by_bytes(bytes, 2);
  ASSERT_EQ(owner.size(), bytes.size());
  EXPECT_EQ(owner[0], 0);
  EXPECT_EQ(owner[1], 1);  // the big item alone is half of the 2000 bytes
  for (size_t i = 1; i < owner.size(); ++i) EXPECT_LE(owner[i - 1], owner[i]) << "contiguous ranges";
  const std::vector<int64_t> sums = part_bytes(bytes, owner, 2);
  EXPECT_EQ(sums[0], 1000);
  EXPECT_EQ(sums[1], 1000);
}

TEST(PartitionByBytes, NoPartExceedsItsShareByMoreThanOneItem) {
  std::srand(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int parts = 1 + trial % 7;
    std::vector<int64_t> bytes(static_cast<size_t>(trial % 50));
    for (int64_t& b : bytes) b = std::rand() % 5 == 0 ? 0 : std::rand() % 100000;
    const std::vector<int> owner = partition_by_bytes(bytes, parts);
    ASSERT_EQ(owner.size(), bytes.size());
    int64_t total = 0, biggest = 0;
    for (int64_t b : bytes) {
      total += std::max<int64_t>(b, 1);
      biggest = std::max<int64_t>(biggest, std::max<int64_t>(b, 1));
    }
    for (size_t i = 0; i < owner.size(); ++i) {
      ASSERT_GE(owner[i], 0);
      ASSERT_LT(owner[i], parts);
      if (i > 0) {
        ASSERT_LE(owner[i - 1], owner[i]);
      }
    }
    for (int64_t s : part_bytes(bytes, owner, parts)) EXPECT_LE(s, total / parts + biggest + 1);
    EXPECT_EQ(owner, partition_by_bytes(bytes, parts)) << "deterministic";
  }
}

TEST(PartitionByBytes, EveryPartGetsWorkWhenItemsAreEqual) {
  const std::vector<int64_t> bytes(8, 4096);
  EXPECT_EQ(partition_by_bytes(bytes, 4), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(partition_by_bytes(bytes, 1), std::vector<int>(8, 0));
  EXPECT_EQ(partition_by_bytes({}, 4), std::vector<int>{});
  // More parts than items: each item has one owner, some parts none.
  EXPECT_EQ(partition_by_bytes({5, 5}, 4), (std::vector<int>{1, 3}));  // midpoints at 1/4 and 3/4
}

TEST(Wire, RoundTripAndTruncation) {
  struct Pod {
    double x;
    int64_t n;
  };
  WireWriter w;
  w.u64(42);
  w.str("reason with \0 byte");
  w.u8(3);
  w.pod(Pod{1.5, -7});
  const std::string bytes = w.take();
  WireReader r(bytes);
  EXPECT_EQ(r.u64(), 42u);
  EXPECT_EQ(r.str(), "reason with ");  // a C string literal stops at its NUL
  EXPECT_EQ(r.u8(), 3);
  const Pod p = r.pod<Pod>();
  EXPECT_EQ(p.x, 1.5);
  EXPECT_EQ(p.n, -7);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.at_end());
  WireReader cut(std::string_view(bytes).substr(0, bytes.size() - 1));
  cut.u64();
  cut.str();
  cut.u8();
  cut.pod<Pod>();
  EXPECT_FALSE(cut.ok());
  WireReader huge(std::string_view("\xff\xff\xff\xff\xff\xff\xff\x7f", 8));
  EXPECT_EQ(huge.str(), "");  // a length beyond the message is an error, not an allocation
  EXPECT_FALSE(huge.ok());
}

TEST(SingleProcessGroup, IsItsOwnRoot) {
  const ProcessGroup& g = single_process_group();
  EXPECT_EQ(g.rank(), 0);
  EXPECT_EQ(g.size(), 1);
  EXPECT_FALSE(is_distributed(&g));
  EXPECT_FALSE(is_distributed(nullptr));
  EXPECT_TRUE(is_output_process(nullptr));
  Result<std::vector<std::string>> all = g.gather("abc");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, std::vector<std::string>{"abc"});
  EXPECT_EQ(g.broadcast(5), 5);
}

TEST(DetectMpiLauncher, ReadsTheLaunchersEnvironment) {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "SLURM_PROCID", "SLURM_NTASKS",
                        "SLURM_STEP_ID"})
    unsetenv(v);
  EXPECT_EQ(detect_mpi_launcher(), "");
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_NTASKS", "1", 1);
  setenv("SLURM_STEP_ID", "0", 1);
  EXPECT_EQ(detect_mpi_launcher(), "") << "one srun task is no group";
  setenv("SLURM_NTASKS", "4", 1);
  EXPECT_EQ(detect_mpi_launcher(), "srun");
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  EXPECT_EQ(detect_mpi_launcher(), "mpirun");
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID"}) unsetenv(v);
}

}  // namespace
}  // namespace parity
