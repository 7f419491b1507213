// Encoding of computed statistics (analysis/stats_exchange.h).
#include "analysis/stats_exchange.h"

#include "parity/process_group.h"

namespace parity::analysis_detail {

namespace {
constexpr uint64_t kMagic = 0x3154535954415000ull;  // "\0PATYST1" as little-endian bytes
}

std::string record_identity(const Record& r) {
  WireWriter w;
  w.u64(static_cast<uint64_t>(r.rank));
  w.u64(static_cast<uint64_t>(r.step));
  w.str(r.name);
  return w.take();
}

std::string encode_loaded_stats(const std::vector<LoadedStats>& loaded, bool by_identity) {
  WireWriter w;
  w.u64(kMagic);
  w.u64(sizeof(TensorStats));
  w.u8(by_identity ? 1 : 0);
  w.u64(loaded.size());
  for (const LoadedStats& l : loaded) {
    if (by_identity) {
      w.str(l.identity);
    } else {
      w.u64(l.index);
    }
    w.u8(l.stats ? 1 : 0);
    if (l.stats) {
      w.pod(*l.stats);
    } else {
      w.u8(static_cast<uint8_t>(l.problem.code()));
      w.str(l.problem.message());
    }
  }
  return w.take();
}

Status decode_loaded_stats(std::string_view message, std::vector<LoadedStats>& out) {
  WireReader r(message);
  if (r.u64() != kMagic || r.u64() != sizeof(TensorStats))
    return Status::Corrupt("statistics from another process: not written by this build of parity");
  const bool by_identity = r.u8() != 0;
  const uint64_t n = r.u64();
  for (uint64_t k = 0; k < n && r.ok(); ++k) {
    LoadedStats l;
    if (by_identity) {
      l.identity = r.str();
    } else {
      l.index = r.u64();
    }
    if (r.u8() != 0) {
      l.stats = r.pod<TensorStats>();
    } else {
      const auto code = static_cast<StatusCode>(r.u8());
      std::string text = r.str();
      l.problem = Status(code, std::move(text));
    }
    out.push_back(std::move(l));
  }
  if (!r.ok() || !r.at_end()) return Status::Corrupt("statistics from another process: truncated message");
  return Status::OK();
}

}  // namespace parity::analysis_detail
