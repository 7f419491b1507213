// The row table's columns (report/compare_columns.h). A column's type is what its cells hold:
// compare_row_cells checks each cell against it in debug builds.
#include "report/compare_columns.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <type_traits>
#include <variant>

namespace parity::report {

namespace {

using T = CellType;

// The row's own columns before the tensor metrics, and after them the statistics-mode relative errors,
// then checksum mode and every row (the published parity.compare.csv/2 layout, docs/compare-json.md).
constexpr Column kRowColumns[] = {
    {"name", T::kText},         {"target_name", T::kText},     {"match", T::kText},
    {"mode", T::kText},         {"golden_dtype", T::kText},    {"target_dtype", T::kText},
    {"golden_shape", T::kText}, {"target_shape", T::kText},    {"module", T::kText},
    {"op", T::kText},           {"direction", T::kText},       {"role", T::kText},
    {"index", T::kInt},         {"step", T::kInt},             {"rank", T::kInt},
    {"order", T::kInt},         {"verdict", T::kText},         {"reason", T::kText}};
constexpr Column kTrailingColumns[] = {
    // statistics mode (StatsDifferences)
    {"stats_max_rel", T::kReal}, {"stats_min_rel", T::kReal}, {"stats_mean_rel", T::kReal},
    {"stats_norm_rel", T::kReal},
    // checksum mode, then every row
    {"checksum_equal", T::kBool}, {"noise", T::kText},         {"noise_ratio", T::kReal}};
constexpr size_t kStatsColumns = 4;

static_assert(std::ranges::none_of(kMetricFields,
                                   [](const MetricField& f) {
                                     return f.kind == MetricKind::kColumn &&
                                            std::holds_alternative<TensorStats PairMetrics::*>(f.member);
                                   }),
              "a side's statistics are not a column of the row table");

// The cell type of a metric's member.
constexpr CellType cell_type(const PairMetricsMember& member) {
  if (std::holds_alternative<double PairMetrics::*>(member)) return T::kReal;
  if (std::holds_alternative<int64_t PairMetrics::*>(member)) return T::kInt;
  return T::kBool;
}

// The tensor-mode columns: the metric table's kColumn rows (parity/metrics.h), in its order.
constexpr size_t kTensorColumns = [] {
  size_t n = 0;
  for (const MetricField& f : kMetricFields) n += f.kind == MetricKind::kColumn;
  return n;
}();

constexpr auto kColumns = [] {
  std::array<Column, std::size(kRowColumns) + kTensorColumns + std::size(kTrailingColumns)> columns{};
  size_t i = 0;
  for (const Column& c : kRowColumns) columns[i++] = c;
  for (const MetricField& f : kMetricFields)
    if (f.kind == MetricKind::kColumn) columns[i++] = {f.name, cell_type(f.member)};
  for (const Column& c : kTrailingColumns) columns[i++] = c;
  return columns;
}();

[[maybe_unused]] bool holds(const Cell& cell, CellType type) {  // for the assert below
  switch (type) {
    case T::kText: return std::holds_alternative<std::string>(cell);
    case T::kInt: return std::holds_alternative<int64_t>(cell);
    case T::kReal: return std::holds_alternative<double>(cell);
    case T::kBool: return std::holds_alternative<bool>(cell);
  }
  return false;
}

// The metric table's kColumn values of `m`, in its order; a value whose column_if flag is unset is empty.
void add_tensor_cells(const PairMetrics& m, std::vector<Cell>& cells) {
  for (const MetricField& f : kMetricFields) {
    if (f.kind != MetricKind::kColumn) continue;
    if (f.column_if != nullptr && !(m.*f.column_if)) {
      cells.emplace_back();
      continue;
    }
    std::visit(
        [&](auto member) {
          if constexpr (!std::is_same_v<decltype(member), TensorStats PairMetrics::*>)  // static_assert above
            cells.emplace_back(m.*member);
        },
        f.member);
  }
}

}  // namespace

std::span<const Column> compare_columns() { return kColumns; }

void compare_row_cells(const CompareRow& r, std::vector<Cell>& cells) {
  cells.clear();
  const Record& g = *r.golden;
  for (std::string s : {std::string(g.name), std::string(r.target->name), std::string(match_kind_name(r.match)),
                        std::string(compare_mode_name(r.mode)), std::string(dtype_name(g.dtype)),
                        std::string(dtype_name(r.target->dtype)), shape_to_string(g.shape),
                        shape_to_string(r.target->shape), std::string(g.module), std::string(g.op),
                        std::string(g.direction), std::string(g.role)}) {
    cells.emplace_back(std::move(s));
  }
  for (int64_t v : {int64_t{g.index}, int64_t{g.step}, int64_t{g.rank}, int64_t{g.order}}) cells.emplace_back(v);
  cells.emplace_back(std::string(verdict_name(r.verdict)));
  cells.emplace_back(r.reason);
  if (r.metrics) {
    add_tensor_cells(*r.metrics, cells);
  } else {
    cells.resize(cells.size() + kTensorColumns);
  }
  if (r.stats) {
    const StatsDifferences s = stats_differences(r);
    for (double v : {s.max_rel, s.min_rel, s.mean_rel, s.norm_rel}) cells.emplace_back(v);
  } else {
    cells.resize(cells.size() + kStatsColumns);
  }
  if (r.checksum_equal) {
    cells.emplace_back(*r.checksum_equal);
  } else {
    cells.emplace_back();
  }
  cells.emplace_back(std::string(noise_class_name(r.noise)));
  cells.emplace_back(r.noise_ratio);
  assert(cells.size() == std::size(kColumns));
  for (size_t i = 0; i < cells.size(); ++i)
    assert(std::holds_alternative<std::monostate>(cells[i]) || holds(cells[i], kColumns[i].type));
}

}  // namespace parity::report
