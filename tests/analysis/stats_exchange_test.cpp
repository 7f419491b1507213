// The statistics a process sends to process 0 in `parity overflow` under mpirun (analysis/stats_exchange.h).
#include <gtest/gtest.h>

#include "analysis/stats_exchange.h"

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

}  // namespace
}  // namespace parity::analysis_detail
