// parity/dump.h — parity's crash-safe capture dump: CRC32C, the fused capture statistics, the
// background writer used by the Python capture, and the reader (a RecordSource, format "parity-run").
//
// The on-disk format is specified in docs/dump-format.md (schema "parity.dump/1"): a run directory holds
// one part per rank (`rank<R>/`), each with an append-only manifest of framed records (length + CRC32C
// per record), append-only data shards with tensor bytes aligned to 64 bytes, an append-only scalars log
// and an append-only environment log. Nothing is rewritten in place, so a process killed at any moment
// leaves every complete record readable; readers report the torn tail instead of failing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parity/dtype.h"
#include "parity/schemas.h"
#include "parity/source.h"
#include "parity/status.h"
#include "parity/tensor.h"

namespace parity::dump {

// ---- CRC32C (Castagnoli, reflected polynomial 0x82F63B78, init/xorout 0xFFFFFFFF) ----------------
// `crc` is the value returned by a previous call, so a checksum can be extended chunk by chunk:
// crc32c(b, nb, crc32c(a, na)) == crc32c(a||b). Uses the SSE4.2 crc32 instruction when the CPU has it,
// else a slicing-by-8 table. (No Debian package ships a CRC32C library, hence our own.)
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);
uint32_t crc32c_table(const void* data, size_t n, uint32_t crc = 0);  // the portable path, for tests
bool crc32c_uses_hardware();

// ---- fused capture statistics ------------------------------------------------------------------------
// One pass over a C-contiguous, native-order buffer of `numel` elements of `dtype`. Same definitions as
// parity::compute_stats: NaN/Inf are counted and excluded from min/max/mean/l2norm/absmax; mean = sum of
// finite elements / number of finite elements; subnormal is counted in the buffer's own dtype; with no
// finite element min/max/mean/l2norm/absmax are 0. It does not measure std (NaN) nor split the Inf
// count by sign (pinf_count = ninf_count = 0: the split unknown, parity/tensor.h). Partial sums are
// kept per fixed 64 Ki-element chunk (8 fixed lanes inside a chunk, AVX2 where the CPU has it) and
// added in chunk order, so the result depends neither on `threads` nor on the CPU (identical reruns
// give identical statistics).
// `threads` > 1 splits the chunks over OpenMP threads. Capture uses 1: between a framework's ops the
// other cores are held by its BLAS / OpenMP pools spinning for their next task, and a second thread
// there often waits for a time slice (one module-level training step: 0.68 s of statistics on two
// threads, 0.20 s on one; docs/benchmarks.md "Capture overhead"), while one thread streams at ~0.5 ns
// per element.
TensorStats fused_stats(DType dtype, const void* data, int64_t numel, int threads = 1);

// The same statistics, bit for bit, of a strided tensor read in C-contiguous (logical) order: `first`
// points at element [0, ..., 0], `stride` gives each dimension's step in elements (0 for a broadcast
// dimension; any order, as torch's transposes and slices make them). The elements are gathered into a
// thread-local buffer reused from call to call (up to 64 MiB; a larger tensor gets its own) and summarised
// there: no allocation, no page faults, no framework call on the training thread, where torch's
// `contiguous()` took milliseconds per tensor (docs/benchmarks.md, issue 34). src/dump/strided.cpp.
TensorStats fused_stats_strided(DType dtype, const void* first, const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& stride);

// Copies a strided tensor (as for fused_stats_strided) into `out`, C-contiguous: the bytes that checksum
// and tensor modes store.
void gather_contiguous(DType dtype, const void* first, const std::vector<int64_t>& shape,
                       const std::vector<int64_t>& stride, void* out);

// ---- frames: the unit of every append-only file --------------------------------------------------
// [u32 magic "PFR1"][u32 payload length][u32 crc32c(length bytes || payload)][payload: UTF-8 JSON]
inline constexpr uint32_t kFrameMagic = 0x31524650;  // bytes 'P','F','R','1' little-endian
inline constexpr size_t kFrameHeaderBytes = 12;
inline constexpr uint32_t kMaxFramePayload = 64u << 20;  // a larger length marks a corrupt frame
inline constexpr uint64_t kDataAlignment = 64;           // tensor bytes start at multiples of this
// The schema a writer puts in the header is schemas::kDump (parity/schemas.h). Minor versions only add
// keys (1.1: op events carry args.replay, docs/dump-format.md "Replay"), so a reader takes
// schemas::kDumpMajor ("parity.dump/1") and every "parity.dump/1.<minor>".
inline bool is_readable_dump_schema(const std::string& schema) {
  const std::string major = schemas::kDumpMajor.id;
  if (schema.compare(0, major.size(), major) != 0) return false;
  if (schema.size() == major.size()) return true;
  if (schema[major.size()] != '.' || schema.size() == major.size() + 1) return false;
  for (size_t i = major.size() + 1; i < schema.size(); ++i)
    if (schema[i] < '0' || schema[i] > '9') return false;
  return true;
}

// Serialise one frame around `payload`.
std::string encode_frame(const std::string& payload);

// Result of scanning an append-only framed file.
struct FrameScan {
  std::vector<std::string> payloads;
  uint64_t file_bytes = 0;
  uint64_t valid_bytes = 0;  // bytes covered by complete, checksum-valid frames
  std::string tail_problem;  // "" when the file ends exactly after a complete frame
};
// Reads every complete frame; stops at the first torn or corrupt one and describes it in tail_problem
// (never an error for a torn tail). Errors only when the file cannot be opened.
Result<FrameScan> scan_frames(const std::filesystem::path& file);

// ---- writer ---------------------------------------------------------------------------------------------
struct WriterOptions {
  int rank = 0;
  bool overwrite = false;                  // false: refuse when the part directory already exists
  uint64_t queue_bytes = 256ull << 20;     // bound on tensor bytes waiting for the writer thread
  uint64_t shard_bytes = 1ull << 30;       // start a new data shard past this size
};

// Everything the manifest says about one tensor event (docs/dump-format.md, "event record").
struct EventMeta {
  std::string name, module, op, direction, role;
  int index = -1;
  int call = 0;             // call count of the module / op within its parent for the step
  int64_t step = -1;
  int64_t order = -1;       // execution order within (rank, step)
  DType dtype = DType::kF32;
  Shape shape;
  std::vector<int64_t> stride;  // element strides of the tensor as it was in the framework
  std::string device;
  std::optional<TensorStats> stats;
  std::optional<uint32_t> crc32c;
  std::string args_json;    // JSON object text of an op's non-tensor arguments, or ""
  std::string extra_json;   // JSON object text merged under "extra", or ""
};

// Owned bytes without zero-filling (a std::vector<std::byte> would touch every byte twice).
struct Buffer {
  std::unique_ptr<std::byte[]> bytes;
  uint64_t size = 0;
  static Buffer allocate(uint64_t n) { return {std::unique_ptr<std::byte[]>(new std::byte[n]), n}; }
};

struct WriterCounters {
  uint64_t events = 0, scalars = 0, data_bytes = 0, queued_bytes = 0, backpressure_waits = 0;
};

// Appends one rank's part of a run from a background thread. append*/write_* only queue (blocking while
// more than queue_bytes of tensor data are waiting: back-pressure); a write error is remembered and
// returned by the next call and by close().
class DumpWriter {
 public:
  static Result<std::unique_ptr<DumpWriter>> create(const std::filesystem::path& run_dir,
                                                    const WriterOptions& options);
  ~DumpWriter();  // close(), errors dropped
  DumpWriter(const DumpWriter&) = delete;
  DumpWriter& operator=(const DumpWriter&) = delete;

  Status write_fingerprint(const std::string& json_object_text);
  Status append_event(EventMeta meta, Buffer data);  // data.size == 0: statistics/checksum only
  Status append_scalars(int64_t step, const std::string& json_object_text);
  Status flush();  // returns once everything queued so far is written to the files
  Status close();  // flush, write the closing record, stop the thread; idempotent
  WriterCounters counters() const;
  const std::filesystem::path& part_dir() const;

  struct Impl;

 private:
  explicit DumpWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---- reader ---------------------------------------------------------------------------------------------
struct PartSummary {
  int rank = -1;
  std::filesystem::path dir;
  uint64_t manifest_bytes = 0, manifest_valid_bytes = 0;
  std::string manifest_tail;   // "" = ends cleanly; else where and how the manifest is torn
  bool closed = false;         // the writer wrote its closing record (stop() ran)
  uint64_t events = 0, data_bytes = 0, scalar_records = 0;
  std::map<std::string, uint64_t> events_by_kind;  // "forward/output", "backward/grad", ...
  std::vector<int64_t> steps;
};

struct ScalarRecord {
  int rank = 0;
  int64_t step = 0;
  std::string json;  // the "values" object
};

// Opens a run directory (or a single rank<R>/ part directory). Never fails on a torn or corrupt tail:
// those are listed in problems(). Errors only when nothing in the directory is a parity dump.
class RunReader : public RecordSource {
 public:
  static Result<std::unique_ptr<RunReader>> open(const std::filesystem::path& run_dir);
  // Only the parts of the given ranks (sorted); a rank the run lacks is skipped, and none at all is an
  // empty run. Its records of those ranks are the whole run's, in the same order.
  static Result<std::unique_ptr<RunReader>> open_ranks(const std::filesystem::path& run_dir,
                                                       const std::vector<int>& ranks);
  ~RunReader() override;

  std::string describe() const override;
  const RecordList& records() const override;
  Result<TensorView> load(const Record& r) const override;
  const std::vector<Status>& problems() const override;
  std::optional<std::string> fingerprint_json() const override;  // rank 0's (the lowest rank's)
  std::string op_arguments_json(const Record& r) const override { return args_json(r); }

  const std::vector<PartSummary>& parts() const;
  const std::vector<ScalarRecord>& scalars() const;
  std::map<int, std::string> fingerprints() const;       // per rank
  const std::string& args_json(const Record& r) const;   // op arguments, "" when none
  std::string device(const Record& r) const;
  std::vector<int64_t> stride(const Record& r) const;
  // Where a record's bytes lie (for zero-copy readers such as numpy.memmap); nullopt without data.
  struct DataLocation {
    std::filesystem::path file;
    uint64_t offset = 0, nbytes = 0;
  };
  std::optional<DataLocation> data_location(const Record& r) const;

  struct Impl;

 private:
  explicit RunReader(std::unique_ptr<Impl> impl);
  static Result<std::unique_ptr<RunReader>> open_parts(const std::filesystem::path& run_dir,
                                                       const std::vector<int>* ranks);  // nullptr: all
  std::unique_ptr<Impl> impl_;
};

// True when `path` is a run directory (has rank*/manifest.pfr) or a part directory (has manifest.pfr).
bool is_run_directory(const std::filesystem::path& path);

// The parts of a run directory in rank order, each with the bytes of the files in its folder (manifest and
// data shards), from the directory listing alone.
std::vector<RankPart> run_rank_parts(const std::filesystem::path& run_dir);

// The FormatSpec registered as "parity-run" in src/formats/registry.cpp.
const FormatSpec& run_format_spec();

// ---- export ---------------------------------------------------------------------------------------------
struct ExportSummary {
  uint64_t tensors = 0, bytes = 0;
  std::vector<std::string> files;
  std::vector<Status> problems;  // tensors that could not be exported (the rest still are)
};
// Writes every record with data to `out_dir` as "npy" (one <name>.npy per tensor, names sanitised;
// bf16 and fp8 widened to float32 because numpy has no such dtype) or "safetensors" (one file per
// rank and step). Refuses to overwrite an existing file.
Result<ExportSummary> export_run(const RunReader& run, const std::string& format,
                                 const std::filesystem::path& out_dir);

}  // namespace parity::dump
