// Encoding of measured rows (compare/row_exchange.h).
#include "compare/row_exchange.h"

#include <algorithm>

#include "parity/process_group.h"

namespace parity::compare {

namespace {

constexpr uint64_t kMagic = 0x32574f5259544150ull;  // "PATYROW2" as little-endian bytes (2: no statistics differences)
enum : uint8_t { kHasMetrics = 1, kHasStats = 2, kHasUpdate = 4 };
enum : uint8_t { kGoldenComputed = 1, kTargetComputed = 2 };

// A statistics row's sides travel only where they were computed from tensor data; the receiver reads
// the others from its records, and the differences are computed from both (stats_differences).
void write_stats(WireWriter& w, const StatsComparison& s) {
  w.u8(static_cast<uint8_t>((s.golden_computed ? kGoldenComputed : 0) | (s.target_computed ? kTargetComputed : 0)));
  if (s.golden_computed) w.pod(*s.golden_computed);
  if (s.target_computed) w.pod(*s.target_computed);
}

StatsComparison read_stats(WireReader& r) {
  StatsComparison s;
  const uint8_t computed = r.u8();
  if (computed & kGoldenComputed) s.golden_computed = r.pod<TensorStats>();
  if (computed & kTargetComputed) s.target_computed = r.pod<TensorStats>();
  return s;
}

}  // namespace

std::string row_identity(const CompareRow& row) {
  WireWriter w;
  w.u64(static_cast<uint64_t>(row.golden->rank));
  w.u64(static_cast<uint64_t>(row.golden->step));
  w.str(row.golden->name);
  w.str(row.target->name);
  return w.take();
}

std::string encode_measured_rows(const RowList& rows, const std::vector<size_t>& which,
                                 int64_t peak_resident_bytes, RowAddress address) {
  WireWriter w;
  w.u64(kMagic);
  w.u64(sizeof(PairMetrics));
  w.u64(sizeof(TensorStats));
  w.u64(sizeof(ParameterUpdate));
  w.u64(static_cast<uint64_t>(peak_resident_bytes));
  w.u8(static_cast<uint8_t>(address));
  w.u64(which.size());
  for (size_t i : which) {
    const CompareRow& row = rows[i];
    if (address == RowAddress::kIndex) {
      w.u64(i);
    } else {
      w.str(row_identity(row));
    }
    w.u8(static_cast<uint8_t>(row.verdict));
    w.str(row.reason);
    w.str(row.layout_note);
    w.u8(static_cast<uint8_t>((row.metrics ? kHasMetrics : 0) | (row.stats ? kHasStats : 0) |
                              (row.update ? kHasUpdate : 0)));
    if (row.metrics) w.pod(*row.metrics);
    if (row.stats) write_stats(w, *row.stats);
    if (row.update) w.pod(*row.update);
  }
  return w.take();
}

namespace {
uint64_t identity_hash(std::string_view identity) { return std::hash<std::string_view>{}(identity); }
}  // namespace

RowsByIdentity::RowsByIdentity(const RowList& rows) {
  index_.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) index_.emplace_back(identity_hash(row_identity(rows[i])), i);
  std::sort(index_.begin(), index_.end());
  // Keep only the hashes that occur once.
  size_t kept = 0;
  for (size_t i = 0; i < index_.size();) {
    size_t j = i + 1;
    while (j < index_.size() && index_[j].first == index_[i].first) ++j;
    if (j == i + 1) index_[kept++] = index_[i];
    i = j;
  }
  index_.resize(kept);
}

std::optional<size_t> RowsByIdentity::find(std::string_view identity, const RowList& rows) const {
  const uint64_t h = identity_hash(identity);
  const auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(h, size_t{0}));
  if (it == index_.end() || it->first != h || row_identity(rows[it->second]) != identity) return std::nullopt;
  return it->second;
}

Result<int64_t> apply_measured_rows(std::string_view message, RowList& rows,
                                    const RowsByIdentity* by_identity, std::vector<char>* applied) {
  WireReader r(message);
  if (r.u64() != kMagic || r.u64() != sizeof(PairMetrics) || r.u64() != sizeof(TensorStats) ||
      r.u64() != sizeof(ParameterUpdate))
    return Status::Corrupt("measured rows from another process: not written by this build of parity");
  const int64_t peak_resident_bytes = static_cast<int64_t>(r.u64());
  const uint8_t address = r.u8();
  if (address > static_cast<uint8_t>(RowAddress::kIdentity) ||
      (address == static_cast<uint8_t>(RowAddress::kIdentity) && by_identity == nullptr))
    return Status::Corrupt("measured rows from another process: rows addressed in a way this process cannot read");
  const uint64_t n = r.u64();
  CompareRow skipped;  // where a row the receiver did not plan is read into, then dropped
  for (uint64_t k = 0; k < n && r.ok(); ++k) {
    CompareRow* row = &skipped;
    if (address == static_cast<uint8_t>(RowAddress::kIndex)) {
      const uint64_t i = r.u64();
      if (!r.ok() || i >= rows.size())
        return Status::Corrupt("measured rows from another process: row " + std::to_string(i) + " out of range");
      row = &rows[i];
      if (applied) (*applied)[i] = 1;
    } else {
      if (const std::optional<size_t> i = by_identity->find(r.str(), rows)) {
        row = &rows[*i];
        if (applied) (*applied)[*i] = 1;
      }
    }
    const uint8_t verdict = r.u8();
    if (verdict > static_cast<uint8_t>(Verdict::kError))
      return Status::Corrupt("measured rows from another process: bad verdict");
    row->verdict = static_cast<Verdict>(verdict);
    row->reason = r.str();
    row->layout_note = r.str();
    const uint8_t has = r.u8();
    if (has & kHasMetrics) row->metrics = r.pod<PairMetrics>();
    if (has & kHasStats) {
      row->stats = read_stats(r);
      // A side's statistics that did not travel are read from this process's record (golden_stats).
      const auto stored = [](const Record* rec) { return rec != nullptr && rec->stats.has_value(); };
      if (row != &skipped && ((!row->stats->golden_computed && !stored(row->golden)) ||
                              (!row->stats->target_computed && !stored(row->target))))
        return Status::Corrupt("measured rows from another process: statistics of a record this process lists "
                               "without them (every process must see the same inputs)");
    }
    if (has & kHasUpdate) row->update = r.pod<ParameterUpdate>();
  }
  if (!r.ok() || !r.at_end()) return Status::Corrupt("measured rows from another process: truncated message");
  return peak_resident_bytes;
}

}  // namespace parity::compare
