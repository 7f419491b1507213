// Which shards of a failing row carry its error (parity/compare_runs.h `attribute_shards`, docs/layout.md
// "Shards"): a row merged from TP ranks is one logical tensor, but a fault usually sits on one rank, and
// the user needs that rank. Each shard's slice of the pair is measured on its own with the same metrics.
#include <algorithm>

#include "parity/compare_runs.h"
#include "parity/metrics.h"

namespace parity {
namespace {

// The slice [begin, end) of dimension `dim` of a view: the same bytes, a narrower shape, the same strides.
TensorView slice(const TensorView& t, int dim, int64_t begin, int64_t end) {
  TensorView s = t;
  std::vector<int64_t> strides = t.strides;
  if (strides.empty()) {  // C order
    strides.assign(t.shape.size(), 1);
    for (size_t d = t.shape.size(); d-- > 1;) strides[d - 1] = strides[d] * t.shape[d];
  }
  s.shape[static_cast<size_t>(dim)] = end - begin;
  s.strides = strides;
  s.data = t.data + static_cast<size_t>(begin * strides[static_cast<size_t>(dim)]) * dtype_size(t.dtype);
  s.numel = 1;
  for (int64_t d : s.shape) s.numel *= d;
  return s;
}

bool attributable(const CompareRow& row) {
  return (row.verdict == Verdict::kFail || row.verdict == Verdict::kError) && row.metrics && row.mode == CompareMode::kTensor &&
         !row.shape_differs;
}

ShardError whole(const std::string& label, const PairMetrics& m) { return {label, m.rel_l2, m.cosine, m.max_abs}; }

// Each slice of the pair measured alone; nullopt when a tensor cannot be read again or the slices do not fit.
std::optional<std::vector<ShardError>> measure_slices(const CompareRow& row, const std::vector<RecordShard>& parts,
                                                      const RecordSource& golden, const RecordSource& target) {
  Result<TensorView> g = golden.load(*row.golden), t = target.load(*row.target);
  if (!g.ok() || !t.ok() || g->shape != t->shape) return std::nullopt;
  MetricOptions mo;
  mo.target_scale_log2 = row.loss_scale_log2;
  std::vector<ShardError> out;
  for (const RecordShard& p : parts) {
    if (p.dim < 0) {
      out.push_back(whole(p.label, *row.metrics));
      continue;
    }
    if (static_cast<size_t>(p.dim) >= g->shape.size() || p.end > g->shape[static_cast<size_t>(p.dim)]) return std::nullopt;
    Result<PairMetrics> m = compare_tensors(slice(*g, p.dim, p.begin, p.end), slice(*t, p.dim, p.begin, p.end), mo);
    if (!m.ok()) return std::nullopt;
    out.push_back(whole(p.label, *m));
  }
  return out;
}

}  // namespace

std::vector<RowShards> attribute_shards(const CompareResult& result, const RecordSource& golden, const RecordSource& target) {
  std::vector<RowShards> out;
  for (size_t i = 0; i < result.rows.size() && out.size() < kMaxShardRows; ++i) {
    const CompareRow& row = result.rows[i];
    if (!attributable(row)) continue;
    std::vector<RecordShard> parts = target.shards(*row.target);
    std::string side = "target";
    if (parts.empty()) parts = golden.shards(*row.golden), side = "golden";
    if (parts.empty()) continue;
    if (auto measured = measure_slices(row, parts, golden, target)) out.push_back({i, side, std::move(*measured)});
  }
  return out;
}

}  // namespace parity
