// read_run_info (parity/run_info.h): a run's part summaries, read whole or divided among a group.
#include "parity/run_info.h"

#include <utility>

#include "parity/open_source.h"  // plan_rank_shares

namespace parity {

namespace {

constexpr uint64_t kMagic = 0x314f464e49415000ull;  // "\0PAINFO1" as little-endian bytes

RunInfo info_of(const dump::RunReader& run) {
  RunInfo info;
  info.parts = run.parts();
  info.fingerprints = run.fingerprints();
  info.scalars = run.scalars();
  info.problems = run.problems();
  return info;
}

void write_status(WireWriter& w, const Status& s) {
  w.u8(static_cast<uint8_t>(s.code()));
  w.str(s.message());
}

Status read_status(WireReader& r) {
  const auto code = static_cast<StatusCode>(r.u8());
  return Status(code, r.str());
}

// One process's share: the ranks it was to read (so that process 0 can check that every process divided
// the same run alike), whether it could read them, and what they hold.
std::string encode_share(const std::vector<int>& ranks, const Result<RunInfo>& share) {
  WireWriter w;
  w.u64(kMagic);
  w.u64(ranks.size());
  for (int r : ranks) w.u64(static_cast<uint64_t>(r));
  w.u8(share.ok() ? 1 : 0);
  if (!share.ok()) {
    write_status(w, share.status());
    return w.take();
  }
  w.u64(share->parts.size());
  for (const dump::PartSummary& p : share->parts) {
    w.u64(static_cast<uint64_t>(p.rank));
    w.str(p.dir.string());
    w.u64(p.manifest_bytes);
    w.u64(p.manifest_valid_bytes);
    w.str(p.manifest_tail);
    w.u8(p.closed ? 1 : 0);
    w.u64(p.events);
    w.u64(p.data_bytes);
    w.u64(p.scalar_records);
    w.u64(p.events_by_kind.size());
    for (const auto& [kind, n] : p.events_by_kind) {
      w.str(kind);
      w.u64(n);
    }
    w.u64(p.steps.size());
    for (int64_t s : p.steps) w.u64(static_cast<uint64_t>(s));
  }
  w.u64(share->fingerprints.size());
  for (const auto& [rank, json] : share->fingerprints) {
    w.u64(static_cast<uint64_t>(rank));
    w.str(json);
  }
  w.u64(share->scalars.size());
  for (const dump::ScalarRecord& sc : share->scalars) {
    w.u64(static_cast<uint64_t>(sc.rank));
    w.u64(static_cast<uint64_t>(sc.step));
    w.str(sc.json);
  }
  w.u64(share->problems.size());
  for (const Status& s : share->problems) write_status(w, s);
  return w.take();
}

// Appends a share decoded from `message` to `info`: an error when its process could not read it, or
// divided the run otherwise than process 0 (`ranks`: the share process 0 planned for it), because it sees
// another directory at the same path.
Status append_share(std::string_view message, const std::vector<int>& ranks, RunInfo& info) {
  WireReader r(message);
  if (r.u64() != kMagic) return Status::Corrupt("run summary from another process: not written by this build of parity");
  std::vector<int> read;
  const uint64_t n = r.u64();
  for (uint64_t i = 0; i < n && r.ok(); ++i) read.push_back(static_cast<int>(r.u64()));
  if (r.u8() == 0) return read_status(r);
  if (read != ranks)
    return Status::Invalid("it divided the run otherwise than process 0 (another directory at the same path?): "
                           "every process must see the inputs at the same paths");
  const uint64_t parts = r.u64();
  for (uint64_t i = 0; i < parts && r.ok(); ++i) {
    dump::PartSummary p;
    p.rank = static_cast<int>(r.u64());
    p.dir = r.str();
    p.manifest_bytes = r.u64();
    p.manifest_valid_bytes = r.u64();
    p.manifest_tail = r.str();
    p.closed = r.u8() != 0;
    p.events = r.u64();
    p.data_bytes = r.u64();
    p.scalar_records = r.u64();
    const uint64_t kinds = r.u64();
    for (uint64_t k = 0; k < kinds && r.ok(); ++k) {
      std::string kind = r.str();
      p.events_by_kind[kind] = r.u64();
    }
    const uint64_t steps = r.u64();
    for (uint64_t k = 0; k < steps && r.ok(); ++k) p.steps.push_back(static_cast<int64_t>(r.u64()));
    info.parts.push_back(std::move(p));
  }
  const uint64_t fingerprints = r.u64();
  for (uint64_t i = 0; i < fingerprints && r.ok(); ++i) {
    const int rank = static_cast<int>(r.u64());
    info.fingerprints[rank] = r.str();
  }
  const uint64_t scalars = r.u64();
  for (uint64_t i = 0; i < scalars && r.ok(); ++i) {
    dump::ScalarRecord sc;
    sc.rank = static_cast<int>(r.u64());
    sc.step = static_cast<int64_t>(r.u64());
    sc.json = r.str();
    info.scalars.push_back(std::move(sc));
  }
  const uint64_t problems = r.u64();
  for (uint64_t i = 0; i < problems && r.ok(); ++i) info.problems.push_back(read_status(r));
  if (!r.ok() || !r.at_end()) return Status::Corrupt("run summary from another process: truncated or malformed");
  return Status::OK();
}

}  // namespace

Result<RunInfo> read_run_info(const std::filesystem::path& run_dir, const ProcessGroup* group) {
  if (!is_distributed(group)) {
    PARITY_ASSIGN_OR_RETURN(std::unique_ptr<dump::RunReader> run, dump::RunReader::open(run_dir));
    return info_of(*run);
  }
  // Every process plans the shares from its own listing of the directory (process 0 checks that they
  // agree). A path with no rank parts (a single part folder) is process 0's alone; the others only check
  // that they see it.
  const std::optional<RankShares> shares = plan_rank_shares({dump::run_rank_parts(run_dir)}, group->size());
  const auto share_of = [&](int process) {
    return shares ? shares->ranks[static_cast<size_t>(process)] : std::vector<int>{};
  };
  const std::vector<int> ranks = share_of(group->rank());
  Result<RunInfo> mine = RunInfo{};
  std::error_code ec;
  if (!ranks.empty() || (!shares && group->is_root())) {
    Result<std::unique_ptr<dump::RunReader>> run =
        shares ? dump::RunReader::open_ranks(run_dir, ranks) : dump::RunReader::open(run_dir);
    mine = run.ok() ? Result<RunInfo>(info_of(**run)) : Result<RunInfo>(run.status());
  } else if (!std::filesystem::is_directory(run_dir, ec)) {
    mine = Status::NotFound(run_dir.string() + ": no such run directory");
  }
  PARITY_ASSIGN_OR_RETURN(std::vector<std::string> all, group->gather(encode_share(ranks, mine)));
  // Process 0 merges the shares in process order, which is rank order (the shares are contiguous).
  RunInfo info;
  Status merged;
  for (size_t from = 0; from < all.size() && merged.ok(); ++from) {
    merged = append_share(all[from], share_of(static_cast<int>(from)), info);
    if (!merged.ok() && from > 0) merged = merged.WithContext("process " + std::to_string(from) + " of " + std::to_string(all.size()));
  }
  // Every process learns whether the run could be read, so that all of them fail or succeed together.
  const bool ok = group->broadcast(merged.ok() ? 1 : 0) != 0;
  if (!ok) return group->is_root() ? merged : Status::Invalid(run_dir.string() + ": the run could not be read (process 0 says why)");
  return group->is_root() ? std::move(info) : RunInfo{};
}

}  // namespace parity
