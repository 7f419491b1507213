// parity/formats.h — the tensor file formats of src/formats, one FormatSpec each.
//
// Each format reads one kind of file as a RecordSource (parity/source.h). They are listed, in probe
// order and together with the capture-run format of src/dump, by registered_formats()
// (parity/open_source.h, src/sources/registry.cpp). Naming rules and limits: docs/formats.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parity/source.h"

namespace parity::formats {

const FormatSpec& npy_format_spec();          // "npy": one tensor per file (src/formats/npy.cpp)
const FormatSpec& npz_format_spec();          // "npz": zip archives of .npy members (npz.cpp)
const FormatSpec& safetensors_format_spec();  // "safetensors" (safetensors.cpp)
const FormatSpec& torch_pt_format_spec();     // "pt": one torch.save'd tensor, read without pickle (torch_pt.cpp)
const FormatSpec& msprobe_format_spec();      // "msprobe": an msprobe dump directory (msprobe.cpp)

// ---- torch .pt files (torch_pt.cpp) -------------------------------------------------------------
// One tensor of a torch.save zip file, as far as the restricted reader understood it.
struct PtTensor {
  DType dtype = DType::kF32;
  Shape shape;
  std::vector<int64_t> strides;  // element strides; empty = C-contiguous
  bool byteswapped = false;      // the file's byteorder is "big"
  bool requires_grad = false;
  int64_t numel = 0;
  std::string storage_key;       // member "<archive>/data/<key>"
  int64_t storage_numel = 0;     // elements of the storage
  int64_t storage_offset = 0;    // elements before the tensor's first
  uint64_t data_offset = 0;      // first data byte, from the start of the file
  uint64_t data_bytes = 0;       // numel × element size
};
// Parses a whole .pt file held in memory (a fuzz entry point: any bytes in, an error or a tensor out).
// Executes no pickle code: only the opcodes and globals torch.save emits for one plain tensor are
// understood; anything else is refused naming the opcode or global. Messages do not name the file.
Result<PtTensor> read_torch_pt(const std::byte* data, uint64_t size);
// A .pt file as a one-record source (the record is named by the file name, like .npy).
Result<std::unique_ptr<RecordSource>> open_torch_pt(const std::filesystem::path& path);

// ---- msprobe dumps (msprobe.cpp) ------------------------------------------------------------------
// One tensor entry of an msprobe dump.json, with the parity record identity it maps to.
struct MsprobeTensor {
  std::string name;         // parity record name: "layers.0/forward/input/0", "<global>/linear#1/forward/output/0"
  std::string msprobe_name; // msprobe's own: "Module.layers.0.Linear.forward.0.input.0"
  std::string module, op, direction, role;
  int index = -1;
  DType dtype = DType::kF32;
  Shape shape;
  std::optional<TensorStats> stats;  // Max/Min/Mean/Norm as dumped (absent ones NaN)
  std::string data_name;    // the tensor file inside dump_tensor_data/, "" when none was written
  std::optional<bool> requires_grad;  // "requires_grad" as dumped, when it is a boolean
};
struct MsprobeDump {
  std::string task, level, framework;
  std::vector<MsprobeTensor> tensors;  // in dump.json order
  std::vector<Status> problems;        // entries that could not be understood (named), never dropped silently
};
// Parses the text of a dump.json (and of its construct.json, "" when absent) into tensor entries (a fuzz
// entry point). Python's json writes NaN/Infinity/-Infinity for non-finite statistics; they are read.
// `label` prefixes messages (the file's path). Fails only when the text is not an msprobe dump.json.
Result<MsprobeDump> parse_msprobe_dump_json(std::string_view dump_json, std::string_view construct_json,
                                            const std::string& label);
// True when `dir` is an msprobe dump: it holds a dump.json with msprobe's task/level/data keys, or
// step*/ and rank*/ (or proc*/) folders that do.
bool is_msprobe_dump(const std::filesystem::path& dir);

}  // namespace parity::formats
