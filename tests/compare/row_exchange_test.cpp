// The measured rows a process sends to process 0 under mpirun (compare/row_exchange.h).
#include <gtest/gtest.h>

#include <cmath>

#include "compare/row_exchange.h"

namespace parity {
namespace {

RowList measured_rows() {
  RowList rows(3);
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
  TensorStats computed;  // the golden side's, from its tensor data; the target's record stores its own
  computed.max = computed.absmax = 2;
  computed.min = computed.mean = computed.l2norm = 0;
  computed.numel = 9;
  s.golden_computed = computed;
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

// Process 0's rows before the message: they point at its own listing, where row 2's target record stores
// its statistics (the golden side's were computed from data by the sender and travel in the message).
struct ReceivingRows {
  Record golden, target;
  RowList rows{3};
  ReceivingRows() {
    target.stats = TensorStats{};  // stored statistics of a tensor holding zeros (the default is NaN)
    target.stats->min = target.stats->max = target.stats->mean = target.stats->l2norm = target.stats->absmax = 0;
    for (CompareRow& row : rows) {
      row.golden = &golden;
      row.target = &target;
    }
  }
};

TEST(RowExchange, RoundTripsTheMeasuredFields) {
  const RowList src = measured_rows();
  const std::string msg = compare::encode_measured_rows(src, {0, 2}, int64_t{5} << 30);
  ReceivingRows receiving;
  RowList& dst = receiving.rows;
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
  ASSERT_TRUE(dst[2].stats->golden_computed.has_value());
  EXPECT_EQ(dst[2].stats->golden_computed->max, 2);
  EXPECT_EQ(dst[2].stats->golden_computed->numel, 9);
  EXPECT_FALSE(dst[2].stats->target_computed.has_value());  // the receiver reads it from its record
  // The differences come from the sides as the receiver has them: the computed golden, its record's target.
  const StatsDifferences d = stats_differences(dst[2]);
  EXPECT_EQ(d.max_diff, -2);
  EXPECT_EQ(d.max_rel, 1);
  EXPECT_EQ(d.mean_diff, 0);
  EXPECT_EQ(dst[2].verdict, Verdict::kWarn);
  EXPECT_EQ(dst[2].reason, std::string("bytes \0 inside", 14));
  ASSERT_TRUE(dst[2].update.has_value());
  EXPECT_EQ(dst[2].update->from_step, 3);
  EXPECT_EQ(dst[2].update->rel_error, 0.5);
  EXPECT_EQ(dst[2].update->golden_norm, 2.0);
  EXPECT_FALSE(dst[0].update.has_value());
}

TEST(RowExchange, RejectsTruncatedForeignOrOutOfRangeMessages) {
  const RowList src = measured_rows();
  const std::string msg = compare::encode_measured_rows(src, {0, 2}, 0);
  ReceivingRows receiving;
  RowList& dst = receiving.rows;
  EXPECT_EQ(compare::apply_measured_rows(std::string_view(msg).substr(0, msg.size() - 3), dst).status().code(),
            StatusCode::kCorrupt);
  std::string foreign = msg;
  foreign[8] ^= 1;  // another sizeof(PairMetrics): another build
  EXPECT_EQ(compare::apply_measured_rows(foreign, dst).status().code(), StatusCode::kCorrupt);
  RowList too_few(1);
  EXPECT_EQ(compare::apply_measured_rows(msg, too_few).status().code(), StatusCode::kCorrupt);
  EXPECT_TRUE(compare::apply_measured_rows(compare::encode_measured_rows(src, {}, 0), dst).ok());
}

// A row whose statistics the sender read from its record, where process 0's record stores none (the
// processes saw different inputs): refused, never read through a missing record.
TEST(RowExchange, StatisticsTheReceiverDoesNotListAreRefused) {
  const std::string msg = compare::encode_measured_rows(measured_rows(), {2}, 0);
  ReceivingRows receiving;
  receiving.target.stats.reset();
  Result<int64_t> applied = compare::apply_measured_rows(msg, receiving.rows);
  EXPECT_EQ(applied.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(applied.status().message().find("same inputs"), std::string::npos) << applied.status().message();
}

}  // namespace
}  // namespace parity

namespace parity {
namespace {

// Rows addressed by identity: process 0 finds each sent row by its (rank, step, names), never a row that
// only shares a hash, and leaves out rows that share one identity (no message can tell them apart).
TEST(RowExchange, RowsByIdentityFindsExactlyTheRowsAMessageCanName) {
  RecordList golden(4), target(4);
  RowList rows(4);
  const char* names[] = {"a/forward/output/0", "b/forward/output/0", "b/forward/output/0", "c/forward/output/0"};
  for (size_t i = 0; i < 4; ++i) {
    golden[i].name = target[i].name = names[i];
    golden[i].rank = 1;
    golden[i].step = 2;
    rows[i].golden = &golden[i];
    rows[i].target = &target[i];
  }
  const compare::RowsByIdentity index(rows);
  EXPECT_EQ(index.find(compare::row_identity(rows[0]), rows), std::optional<size_t>(0));
  EXPECT_EQ(index.find(compare::row_identity(rows[3]), rows), std::optional<size_t>(3));
  EXPECT_EQ(index.find(compare::row_identity(rows[1]), rows), std::nullopt);  // rows 1 and 2 share it
  std::string other = compare::row_identity(rows[0]);
  other.back() = 'X';
  EXPECT_EQ(index.find(other, rows), std::nullopt);
  EXPECT_EQ(compare::RowsByIdentity().find(compare::row_identity(rows[0]), rows), std::nullopt);
  // A message addressed by identity writes the rows it names, and only those.
  RowList sent = rows;
  sent[3].verdict = Verdict::kFail;
  sent[3].reason = "measured by process 1";
  sent[1].verdict = Verdict::kWarn;
  const std::string msg = compare::encode_measured_rows(sent, {1, 3}, 0, compare::RowAddress::kIdentity);
  std::vector<char> applied(4, 0);
  ASSERT_TRUE(compare::apply_measured_rows(msg, rows, &index, &applied).ok());
  EXPECT_EQ(applied, (std::vector<char>{0, 0, 0, 1}));
  EXPECT_EQ(rows[3].reason, "measured by process 1");
  EXPECT_NE(rows[1].verdict, Verdict::kWarn);
}

}  // namespace
}  // namespace parity
