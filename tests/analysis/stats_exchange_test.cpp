// The statistics a process sends to process 0 in `parity overflow` under mpirun (analysis/stats_exchange.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>

#include "analysis/stats_exchange.h"
#include "distributed/played_group.h"
#include "distributed/synthetic_run.h"
#include "formats/test_util.h"
#include "parity/diagnosis.h"
#include "parity/dump.h"
#include "parity/open_source.h"

namespace parity::analysis_detail {
namespace {

TEST(StatsExchange, RoundTripsStatisticsAndProblems) {
  std::vector<LoadedStats> in(2);
  in[0].index = 4;
  TensorStats s;
  s.max = 65504;
  s.nan_count = 2;
  s.numel = 10;
  in[0].stats = s;
  in[1].index = 9;
  in[1].problem = Status::Corrupt("a.npy: truncated");
  std::vector<LoadedStats> out;
  ASSERT_TRUE(decode_loaded_stats(encode_loaded_stats(in), out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].index, 4u);
  ASSERT_TRUE(out[0].stats.has_value());
  EXPECT_EQ(out[0].stats->max, 65504);
  EXPECT_EQ(out[0].stats->nan_count, 2);
  EXPECT_EQ(out[0].stats->numel, 10);
  EXPECT_EQ(out[1].index, 9u);
  EXPECT_FALSE(out[1].stats.has_value());
  EXPECT_EQ(out[1].problem.code(), StatusCode::kCorrupt);
  EXPECT_EQ(out[1].problem.message(), "a.npy: truncated");
  const std::string msg = encode_loaded_stats(in);
  std::vector<LoadedStats> cut;
  EXPECT_FALSE(decode_loaded_stats(std::string_view(msg).substr(0, msg.size() - 1), cut).ok());
}

// `parity overflow` under played groups (no MPI): the statistics computed from tensor data are split
// between the processes and gathered, and the report (problems in record order included) is the one
// process's.
TEST(StatsExchange, OverflowUnderAGroupIsTheOneProcessReport) {
  using namespace parity_test;
  TempDir d;
  for (int i = 0; i < 9; ++i) {
    std::vector<float> v(static_cast<size_t>(16 << i), 1.5f * static_cast<float>(i));
    if (i == 4) v[3] = std::numeric_limits<float>::infinity();
    if (i == 6) v[0] = std::numeric_limits<float>::quiet_NaN();
    const std::string data(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    write_file(d / ("x" + std::to_string(i) + ".npy"),
               npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(v.size()) + ",), }", data));
  }
  write_file(d / "x5_bad.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }", "abcd"));
  Result<std::unique_ptr<RecordSource>> src = open_source(d.path().string(), "");
  ASSERT_TRUE(src.ok());
  const std::string alone = overflow_to_json(analyse_overflow(**src)).dump();
  ASSERT_NE(alone.find("\"nonfinite_records\":2"), std::string::npos) << alone;
  for (int size : {2, 4}) {
    parity_test::Mailbox mailbox;
    for (int rank = size - 1; rank >= 1; --rank) {
      PlayedGroup group(rank, size, mailbox);
      OverflowOptions o;
      o.group = &group;
      EXPECT_EQ(analyse_overflow(**src, o).records, 0) << "only process 0 has a report";
    }
    PlayedGroup zero(0, size, mailbox);
    OverflowOptions o;
    o.group = &zero;
    EXPECT_EQ(overflow_to_json(analyse_overflow(**src, o)).dump(), alone) << "group of " << size;
  }
}

// `parity overflow` of a capture run under played groups, divided by rank (open_divided_sources): each
// process other than 0 lists only its ranks and sends their statistics by identity; the report is the one
// process's, and a process that sends nothing loses nothing (process 0 computes those records itself).
TEST(StatsExchange, OverflowOfACaptureDividedByRankIsTheOneProcessReport) {
  using namespace parity_test;
  TempDir d;
  write_synthetic_run(d.path(), 4, 5, 64, [](int rank, int e, int i) {
    return rank == 2 && e >= 3 && i == 5 ? std::numeric_limits<float>::infinity() : 0.5f * static_cast<float>(i - e);
  });
  const std::string run = d.path().string();
  DividedSources whole = open_divided_sources({{run, ""}}, nullptr);
  ASSERT_TRUE(whole.status.ok()) << whole.status.ToString();
  const std::string alone = overflow_to_json(analyse_overflow(*whole.sources[0])).dump();
  ASSERT_NE(alone.find("\"nonfinite_records\":2"), std::string::npos) << alone;
  for (int size : {2, 3, 4}) {  // (more processes than ranks split the records by bytes instead)
    for (bool silent_process : {false, true}) {
      parity_test::Mailbox mailbox;
      for (int rank = size - 1; rank >= 0; --rank) {
        PlayedGroup group(rank, size, mailbox);
        DividedSources s = open_divided_sources({{run, ""}}, &group);
        ASSERT_TRUE(s.status.ok() && s.shares.has_value());
        const std::vector<int>& own = s.shares->ranks[static_cast<size_t>(rank)];
        if (rank > 0) {
          for (const Record& r : s.sources[0]->records())
            EXPECT_TRUE(std::binary_search(own.begin(), own.end(), r.rank)) << "process " << rank << " listed rank " << r.rank;
          if (silent_process && rank == 1) s.sources[0] = std::move(open_source_ranks(run, "", {})).value();
        }
        OverflowOptions o;
        o.group = &group;
        o.rank_shares = &*s.shares;
        const OverflowReport rep = analyse_overflow(*s.sources[0], o);
        if (rank == 0) {
          EXPECT_EQ(overflow_to_json(rep).dump(), alone) << "group of " << size << (silent_process ? ", process 1 silent" : "");
        }
      }
    }
  }
}

}  // namespace
}  // namespace parity::analysis_detail
