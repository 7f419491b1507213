// export_run: a capture run's tensors as files other tools read (`parity export`).
//
// npy: one file per tensor under <out>/rank<R>/step<S>/, named from the record name ('/' -> "__", other
// characters outside [A-Za-z0-9._#-] -> '_'), plus <out>/index.json mapping record names to files.
// numpy has no bf16 or fp8 dtype, so those are widened to float32 (exactly: every bf16/fp8 value is
// a float32 value). safetensors: one <out>/rank<R>_step<S>.safetensors per (rank, step) with the
// record names as keys and the dtype kept (BF16, F8_E4M3, ...), per the safetensors spec
// (8-byte little-endian header length, JSON header with dtype/shape/data_offsets, then the bytes).
// Nothing is overwritten: if any target file exists, nothing is written and the error names it.
#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "parity/json_number.h"
#include "parity/dump.h"

namespace parity::dump {
namespace fs = std::filesystem;
namespace {

std::string sanitise(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '/') out += "__";
    else if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '#') out += c;
    else out += '_';
  }
  if (out.empty() || out[0] == '.') out = "_" + out;
  return out;
}

const char* npy_descr(DType t) {
  switch (t) {
    case DType::kF64: return "<f8";
    case DType::kF32: return "<f4";
    case DType::kF16: return "<f2";
    case DType::kI8: return "|i1";
    case DType::kI16: return "<i2";
    case DType::kI32: return "<i4";
    case DType::kI64: return "<i8";
    case DType::kU8: return "|u1";
    case DType::kBool: return "|b1";
    default: return nullptr;  // bf16, fp8: widened to <f4
  }
}

const char* st_dtype(DType t) {
  switch (t) {
    case DType::kF64: return "F64";
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kF8E4M3: return "F8_E4M3";
    case DType::kF8E5M2: return "F8_E5M2";
    case DType::kI8: return "I8";
    case DType::kI16: return "I16";
    case DType::kI32: return "I32";
    case DType::kI64: return "I64";
    case DType::kU8: return "U8";
    case DType::kBool: return "BOOL";
  }
  return "U8";
}

Status write_file(const fs::path& file, const std::vector<std::pair<const void*, size_t>>& pieces) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IOError(fmt::format("{}: cannot create", file.string()));
  for (const auto& [p, n] : pieces) out.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
  out.close();
  if (!out) return Status::IOError(fmt::format("{}: write failed", file.string()));
  return Status::OK();
}

Status write_npy(const fs::path& file, const TensorView& t) {
  const char* descr = npy_descr(t.dtype);
  std::vector<float> widened;
  const void* data = t.data;
  size_t nbytes = static_cast<size_t>(t.nbytes());
  if (!descr) {
    widened.resize(static_cast<size_t>(t.numel));
    decode_to_float(t, 0, t.numel, widened.data());
    descr = "<f4";
    data = widened.data();
    nbytes = widened.size() * sizeof(float);
  }
  std::string shape;
  for (size_t i = 0; i < t.shape.size(); ++i) shape += fmt::format("{}, ", t.shape[i]);
  if (t.shape.size() > 1) shape.resize(shape.size() - 2);
  else if (t.shape.size() == 1) shape.resize(shape.size() - 1);
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  // NPY 1.0: magic(6) + version(2) + u16 header length, header padded with spaces to a multiple of 64
  // and ended with '\n'.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string pre = "\x93NUMPY";
  pre += '\x01';
  pre += '\x00';
  pre += static_cast<char>(header.size() & 0xFF);
  pre += static_cast<char>((header.size() >> 8) & 0xFF);
  return write_file(file, {{pre.data(), pre.size()}, {header.data(), header.size()}, {data, nbytes}});
}

}  // namespace

Result<ExportSummary> export_run(const RunReader& run, const std::string& format, const fs::path& out_dir) {
  if (format != "npy" && format != "safetensors")
    return Status::Invalid(fmt::format("export format \"{}\" is not one of npy, safetensors", format));
  ExportSummary sum;
  // Plan every target file first so that an existing one stops us before anything is written.
  std::map<std::pair<int, int64_t>, std::vector<const Record*>> groups;
  for (const Record& r : run.records())
    if (r.has_data) groups[{r.rank, r.step}].push_back(&r);
  if (groups.empty())
    return Status::NotFound(fmt::format("{}: no record has tensor data (capture with mode=\"tensor\" to export)",
                                        run.describe()));
  std::map<const Record*, fs::path> npy_targets;
  std::vector<fs::path> targets;
  if (format == "npy") {
    for (auto& [key, recs] : groups) {
      std::set<std::string> used;
      for (const Record* r : recs) {
        std::string base = sanitise(r->name);
        std::string cand = base;
        for (int k = 1; used.count(cand); ++k) cand = fmt::format("{}~{}", base, k);
        used.insert(cand);
        const fs::path f = out_dir / fmt::format("rank{}", key.first) / fmt::format("step{}", key.second) / (cand + ".npy");
        npy_targets[r] = f;
        targets.push_back(f);
      }
    }
    targets.push_back(out_dir / "index.json");
  } else {
    for (auto& [key, recs] : groups)
      targets.push_back(out_dir / fmt::format("rank{}_step{}.safetensors", key.first, key.second));
  }
  for (const fs::path& f : targets) {
    std::error_code ec;
    if (fs::exists(f, ec))
      return Status::Invalid(fmt::format("{}: already exists; export never overwrites (choose an empty directory)",
                                         f.string()));
  }

  if (format == "npy") {
    nlohmann::json index = {{"schema", "parity.export/1"}, {"run", run.describe()}, {"tensors", nlohmann::json::array()}};
    for (auto& [r, f] : npy_targets) {
      auto t = run.load(*r);
      Status st = t.ok() ? write_npy(f, *t) : t.status();
      if (!st.ok()) {
        sum.problems.push_back(st);
        continue;
      }
      ++sum.tensors;
      sum.bytes += static_cast<uint64_t>(t->nbytes());
      sum.files.push_back(f.string());
      index["tensors"].push_back({{"name", r->name}, {"rank", r->rank}, {"step", r->step},
                                  {"dtype", dtype_name(r->dtype)}, {"file", fs::relative(f, out_dir).string()}});
    }
    const std::string text = json_text(index, 1);
    PARITY_RETURN_NOT_OK(write_file(out_dir / "index.json", {{text.data(), text.size()}}));
    sum.files.push_back((out_dir / "index.json").string());
    return sum;
  }

  size_t gi = 0;
  for (auto& [key, recs] : groups) {
    const fs::path f = targets[gi++];
    nlohmann::json header = nlohmann::json::object();
    std::vector<TensorView> views;
    uint64_t offset = 0;
    for (const Record* r : recs) {
      auto t = run.load(*r);
      if (!t.ok()) {
        sum.problems.push_back(t.status());
        continue;
      }
      const uint64_t n = static_cast<uint64_t>(t->nbytes());
      header[r->name] = {{"dtype", st_dtype(r->dtype)}, {"shape", r->shape}, {"data_offsets", {offset, offset + n}}};
      offset += n;
      views.push_back(*t);
    }
    header["__metadata__"] = {{"format", "pt"}, {"source", "parity"}, {"rank", std::to_string(key.first)},
                              {"step", std::to_string(key.second)}};
    std::string htext = json_text(header);
    htext.append((8 - htext.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
    uint64_t hlen = htext.size();
    unsigned char len8[8];
    for (int i = 0; i < 8; ++i) len8[i] = static_cast<unsigned char>((hlen >> (8 * i)) & 0xFF);
    std::vector<std::pair<const void*, size_t>> pieces = {{len8, 8}, {htext.data(), htext.size()}};
    for (const TensorView& v : views) pieces.emplace_back(v.data, static_cast<size_t>(v.nbytes()));
    PARITY_RETURN_NOT_OK(write_file(f, pieces));
    sum.tensors += views.size();
    sum.bytes += offset;
    sum.files.push_back(f.string());
  }
  return sum;
}

}  // namespace parity::dump
