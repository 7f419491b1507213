// The measured rows a process sends to process 0 under mpirun (compare/row_exchange.h).
#include <gtest/gtest.h>

#include <cmath>

#include "compare/row_exchange.h"

namespace parity {
namespace {

std::vector<CompareRow> measured_rows() {
  std::vector<CompareRow> rows(3);
  PairMetrics m;
  m.numel = 12;
  m.cosine = 0.25;
  m.rel_l2 = kNaN;
  m.max_abs_index = 7;
  m.nonfinite_agree = false;
  m.golden.nan_count = 3;
  m.target.l2norm = 1e300;
  m.kl_computed = true;
  rows[0].metrics = m;
  rows[0].verdict = Verdict::kFail;
  rows[0].reason = "beyond rounding (410 u)";
  rows[0].layout_note = "target stored transposed";
  StatsComparison s;
  s.golden.max = 2;
  s.target.numel = 9;
  s.worst_rel = INFINITY;
  rows[2].stats = s;
  rows[2].verdict = Verdict::kWarn;
  rows[2].reason = std::string("bytes \0 inside", 14);
  ParameterUpdate u;
  u.from_step = 3;
  u.rel_error = 0.5;
  u.golden_norm = 2.0;
  rows[2].update = u;  // measured, not yet judged (process 0 judges it)
  return rows;
}

TEST(RowExchange, RoundTripsTheMeasuredFields) {
  const std::vector<CompareRow> src = measured_rows();
  const std::string msg = compare::encode_measured_rows(src, {0, 2}, int64_t{5} << 30);
  std::vector<CompareRow> dst(3);
  Result<int64_t> peak = compare::apply_measured_rows(msg, dst);
  ASSERT_TRUE(peak.ok());
  EXPECT_EQ(*peak, int64_t{5} << 30);  // the sender's peak resident memory travels with its rows
  ASSERT_TRUE(dst[0].metrics.has_value());
  EXPECT_EQ(dst[0].metrics->numel, 12);
  EXPECT_EQ(dst[0].metrics->cosine, 0.25);
  EXPECT_TRUE(std::isnan(dst[0].metrics->rel_l2));
  EXPECT_EQ(dst[0].metrics->max_abs_index, 7);
  EXPECT_FALSE(dst[0].metrics->nonfinite_agree);
  EXPECT_EQ(dst[0].metrics->golden.nan_count, 3);
  EXPECT_EQ(dst[0].metrics->target.l2norm, 1e300);
  EXPECT_TRUE(dst[0].metrics->kl_computed);
  EXPECT_FALSE(dst[0].stats.has_value());
  EXPECT_EQ(dst[0].verdict, Verdict::kFail);
  EXPECT_EQ(dst[0].reason, "beyond rounding (410 u)");
  EXPECT_EQ(dst[0].layout_note, "target stored transposed");
  // Row 1 was not in the message: untouched.
  EXPECT_FALSE(dst[1].metrics.has_value());
  EXPECT_EQ(dst[1].verdict, Verdict::kError);
  ASSERT_TRUE(dst[2].stats.has_value());
  EXPECT_EQ(dst[2].stats->golden.max, 2);
  EXPECT_EQ(dst[2].stats->target.numel, 9);
  EXPECT_TRUE(std::isinf(dst[2].stats->worst_rel));
  EXPECT_EQ(dst[2].verdict, Verdict::kWarn);
  EXPECT_EQ(dst[2].reason, std::string("bytes \0 inside", 14));
  ASSERT_TRUE(dst[2].update.has_value());
  EXPECT_EQ(dst[2].update->from_step, 3);
  EXPECT_EQ(dst[2].update->rel_error, 0.5);
  EXPECT_EQ(dst[2].update->golden_norm, 2.0);
  EXPECT_FALSE(dst[0].update.has_value());
}

TEST(RowExchange, RejectsTruncatedForeignOrOutOfRangeMessages) {
  const std::vector<CompareRow> src = measured_rows();
  const std::string msg = compare::encode_measured_rows(src, {0, 2}, 0);
  std::vector<CompareRow> dst(3);
  EXPECT_EQ(compare::apply_measured_rows(std::string_view(msg).substr(0, msg.size() - 3), dst).status().code(),
            StatusCode::kCorrupt);
  std::string foreign = msg;
  foreign[8] ^= 1;  // another sizeof(PairMetrics): another build
  EXPECT_EQ(compare::apply_measured_rows(foreign, dst).status().code(), StatusCode::kCorrupt);
  std::vector<CompareRow> too_few(1);
  EXPECT_EQ(compare::apply_measured_rows(msg, too_few).status().code(), StatusCode::kCorrupt);
  EXPECT_TRUE(compare::apply_measured_rows(compare::encode_measured_rows(src, {}, 0), dst).ok());
}

}  // namespace
}  // namespace parity
