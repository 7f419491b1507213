// The row table's columns are the published parity.compare.csv/2 / parity.compare.arrow/1 layout
// (docs/compare-json.md "CSV"), though the tensor-mode ones are now generated from the metric table
// (parity/metrics.h): a metric table row of kind kColumn moves every column after it, a new schema revision.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/compare_columns.h"

namespace parity::report {
namespace {

TEST(CompareColumns, AreThePublishedCsv2Layout) {
  const std::vector<std::string> published = {
      "name", "target_name", "match", "mode", "golden_dtype", "target_dtype", "golden_shape", "target_shape",
      "module", "op", "direction", "role", "index", "step", "rank", "order", "verdict", "reason",
      "cosine", "euclidean", "rel_l2", "rmse", "sqnr_db", "max_abs", "max_abs_index", "mean_abs", "max_rel",
      "max_rel_index", "thousandth_ratio", "five_thousandth_ratio", "frac_abs_gt_1e6", "frac_abs_gt_1e4",
      "frac_abs_gt_1e2", "ulp_max", "ulp_mean", "frac_ulp_gt1", "nonfinite_mismatch", "ftz_count", "kl",
      "stats_max_rel", "stats_min_rel", "stats_mean_rel", "stats_norm_rel", "checksum_equal", "noise",
      "noise_ratio"};
  std::vector<std::string> columns;
  for (const Column& c : compare_columns()) columns.emplace_back(c.name);
  EXPECT_EQ(columns, published);
}

TEST(CompareColumns, MetricCellsHaveTheirColumnsTypes) {
  // The tensor columns' types follow the metric members' (indices are integers, kl a real).
  for (const Column& c : compare_columns()) {
    const std::string name = c.name;
    if (name == "max_abs_index" || name == "nonfinite_mismatch" || name == "ftz_count") {
      EXPECT_EQ(c.type, CellType::kInt) << name;
    }
    if (name == "cosine" || name == "kl" || name == "frac_ulp_gt1") {
      EXPECT_EQ(c.type, CellType::kReal) << name;
    }
  }
}

}  // namespace
}  // namespace parity::report
