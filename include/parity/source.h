// parity/source.h — everything parity compares comes from a RecordSource.
//
// A source is a set of named records: tensors in .npy/.npz/.safetensors files or directories of them,
// events of a parity capture dump, entries of an msprobe dump. A record always has a name and a dtype
// and shape; it may have the tensor data, stored statistics, a checksum, and capture metadata. Sources
// list their records up front (cheap: headers only) and map tensor bytes on demand, so memory use is
// bounded by the tensors being compared, not the size of the dump.
//
// Adding a format = one file under src/formats/ (or src/dump/) defining a FormatSpec, plus one line in
// src/sources/registry.cpp. Opening a path with the right format: open_source() (parity/open_source.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parity/dtype.h"
#include "parity/interned_shape.h"
#include "parity/interned_string.h"
#include "parity/spill.h"
#include "parity/status.h"
#include "parity/tensor.h"

namespace parity {

// Texts are interned (parity/interned_string.h): a run repeats the same names, modules and ops in every
// rank, and a listing of a million records held each copy.
struct Record {
  InternedString name;   // the matching key: relative path, "file:key", or a capture event name
  InternedString file;   // file that holds it (for messages)
  DType dtype = DType::kF32;
  bool has_data = false;  // tensor bytes are available through RecordSource::load
  InternedShape shape;  // interned: a thousand-rank run repeats its shapes in every rank

  // Capture metadata (defaults for plain tensor files, where only `order` is set: listing order).
  InternedString module;     // module path as named_modules() gives it ("" for plain files)
  InternedString op;         // op name for op-level events ("softmax"), module class for module events
  InternedString direction;  // "forward" | "backward" | ""
  InternedString role;       // "input" | "output" | "parameter" | "grad" | ""
  int index = -1;         // position among the args / outputs
  int rank = -1;
  int64_t step = -1;
  int64_t order = -1;     // position in execution order within (rank, step)

  std::optional<TensorStats> stats;  // stored statistics (statistics-mode dumps)
  std::optional<uint32_t> crc32c;    // stored checksum (checksum-mode dumps)
  uint64_t handle = 0;               // source-private locator
};

// A source's records: a listing of a thousand-rank run holds millions, so they live in a spill file
// (parity/spill.h), not in the process's anonymous memory.
using RecordList = SpillVector<Record>;

// What the tool that wrote a dump calls a record and what else it recorded of it (RecordSource::native_info).
struct NativeRecordInfo {
  std::string name;                   // msprobe: "Functional.linear.0.forward.output.0"; "" = parity's own
  std::optional<bool> requires_grad;  // msprobe's "requires_grad", when the dump says
};

// A part of a record's tensor that the run held apart (a TP shard of a record merged from several ranks,
// parity/layout.h): the slice [begin, end) of dimension `dim`, or, with dim = -1, the whole record (one PP
// stage's). `label` names it as users do: "TP shard 1 of 2, PP stage 1 of 2".
struct RecordShard {
  std::string label;
  int dim = -1;
  int64_t begin = 0, end = 0;
};

class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // Human-readable identity: the path and the format.
  virtual std::string describe() const = 0;
  virtual const RecordList& records() const = 0;
  // Map (or decode) the tensor of a record with has_data. Errors name the file.
  virtual Result<TensorView> load(const Record& r) const = 0;
  // Files or records that could not be read while listing. They are reported, never fatal: one bad
  // tensor never stops the rest of the work.
  virtual const std::vector<Status>& problems() const = 0;
  // The environment fingerprint of a capture run as a JSON text, when the source has one.
  virtual std::optional<std::string> fingerprint_json() const { return std::nullopt; }
  // The recorded non-tensor arguments of an op event as a JSON object text ({"args": [...], "kwargs":
  // {...}}, docs/dump-format.md), "" when the source records none for this record.
  virtual std::string op_arguments_json(const Record& r) const { return ""; }
  // The record as the tool that wrote it names and describes it, for outputs laid out as that tool's
  // (`parity compare --msprobe-csv`, docs/compare-json.md "msprobe"): empty for formats whose names are
  // parity's own.
  virtual NativeRecordInfo native_info(const Record& r) const { return {}; }
  // The parts of a record that the run held apart, for saying which of them carry an error (the
  // compare JSON's `shards`); empty for a record held whole, as every format stores its records.
  virtual std::vector<RecordShard> shards(const Record& r) const { return {}; }
};

// One rank's part of a multi-rank capture (a folder per rank), with the bytes of its files: what a group
// of processes divides among themselves before anything is listed (docs/cli.md "Many processes").
struct RankPart {
  int rank = -1;
  int64_t bytes = 0;
};

struct FormatSpec {
  const char* name;  // "npy", "npz", "safetensors", "parity-run", "msprobe", ...
  // Cheap test on a path (extension, magic bytes, marker file).
  bool (*probe)(const std::filesystem::path& path);
  Result<std::unique_ptr<RecordSource>> (*open)(const std::filesystem::path& path);
  // True for formats that are a whole directory (capture runs); a plain directory of tensor files is
  // handled by the directory source, which asks the single-file formats about each file.
  bool is_directory_format = false;
  // True for formats that hold exactly one tensor per file (.npy): inside a directory its record is
  // named by the file's relative path alone; records of other formats are named "relpath:name".
  bool one_tensor_per_file = false;
  // Multi-rank formats only (nullptr elsewhere): the rank parts of a path, from the directory alone (no
  // manifest read), in rank order; and a source over the given ranks' parts alone (sorted; none is an
  // empty source), whose records, problems and loads are exactly those of the whole source's for them.
  std::vector<RankPart> (*rank_parts)(const std::filesystem::path& path) = nullptr;
  Result<std::unique_ptr<RecordSource>> (*open_ranks)(const std::filesystem::path& path,
                                                      const std::vector<int>& ranks) = nullptr;
};

}  // namespace parity
