// export_run: a capture run's tensors as files other tools read (`parity export`).
//
// npy: one file per tensor under <out>/rank<R>/step<S>/, named from the record name ('/' -> "__", other
// characters outside [A-Za-z0-9._#-] -> '_'). numpy has no bf16 or fp8 dtype, so those are widened to
// float32 (exactly: every bf16/fp8 value is a float32 value). safetensors: one
// <out>/rank<R>_step<S>.safetensors per (rank, step) with the record names as keys and the dtype kept
// (BF16, F8_E4M3, ...), per the safetensors spec (8-byte little-endian header length, JSON header with
// dtype/shape/data_offsets, then the bytes). Both write <out>/index.json (parity.export/2): per tensor
// its file (and key) and the record's identity, so that `parity compare RUN OUT` pairs every record
// (the reader is src/sources/export_source.cpp).
// Nothing is overwritten: if any target file exists, nothing is written and the error names it.
// Nothing is written outside the output directory: files are created with O_EXCL | O_NOFOLLOW (a planted
// link, dangling or not, is "already exists"), and a symbolic link where export would create a folder
// inside the output directory (rank<R>/, step<S>/) is refused before anything is written.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "parity/json_number.h"
#include "parity/dump.h"
#include "parity/schemas.h"

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

// The folder of one (rank, step) in the npy layout, relative to the output directory.
fs::path npy_dir(int rank, int64_t step) { return fs::path(fmt::format("rank{}", rank)) / fmt::format("step{}", step); }

// What lies at `p` without following a link: 0 nothing, 'd' a real directory, 'l' a symbolic link, 'f' else.
char entry_kind(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return 0;
  if (S_ISLNK(st.st_mode)) return 'l';
  return S_ISDIR(st.st_mode) ? 'd' : 'f';
}

// A folder of the export that may not be a link: the error when it is one (or is not a folder).
Status check_inner_dir(const fs::path& dir, const fs::path& out_dir) {
  const char k = entry_kind(dir);
  if (k == 'l')
    return Status::Invalid(fmt::format("{}: is a symbolic link; export writes only inside {} and never through a link",
                                       dir.string(), out_dir.string()));
  if (k == 'f') return Status::Invalid(fmt::format("{}: exists and is not a directory", dir.string()));
  return Status::OK();
}

// Creates out_dir/rel one folder at a time, refusing a symbolic link on the way.
Status make_inner_dirs(const fs::path& out_dir, const fs::path& rel) {
  fs::path p = out_dir;
  for (const fs::path& part : rel) {
    p /= part;
    if (::mkdir(p.c_str(), 0755) == 0) continue;
    const int e = errno;
    if (e != EEXIST) return Status::IOError(fmt::format("{}: cannot create: {}", p.string(), std::strerror(e)));
    PARITY_RETURN_NOT_OK(check_inner_dir(p, out_dir));
  }
  return Status::OK();
}

// Creates `file` (never an existing one, never through a link) with the pieces; a failed write removes
// the partial file.
Status write_file(const fs::path& file, const std::vector<std::pair<const void*, size_t>>& pieces) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(fmt::format("{}: cannot create: {}", file.string(), std::strerror(errno)));
  int err = 0;
  for (const auto& [p, n] : pieces) {
    const char* c = static_cast<const char*>(p);
    size_t left = n;
    while (left > 0 && err == 0) {
      const ssize_t w = ::write(fd, c, left);
      if (w < 0) {
        if (errno != EINTR) err = errno;
        continue;
      }
      c += w;
      left -= static_cast<size_t>(w);
    }
    if (err) break;
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err) {
    ::unlink(file.c_str());
    return Status::IOError(fmt::format("{}: write failed: {} (the partial file was removed)", file.string(),
                                       std::strerror(err)));
  }
  return Status::OK();
}

// The error of an export that wrote no tensor: how many failed, which, and the first reason.
Status nothing_exported(const fs::path& out_dir, const std::vector<std::string>& failed, const Status& first) {
  std::string names;
  for (size_t i = 0; i < failed.size() && i < 5; ++i) names += (i ? ", " : "") + failed[i];
  if (failed.size() > 5) names += fmt::format(", ... {} more", failed.size() - 5);
  return Status::IOError(fmt::format("{}: no tensor exported; {} failed ({}): {}", out_dir.string(), failed.size(),
                                     names, first.message()));
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
  if (header.size() + 11 > 0xFFFF)  // NPY 1.0 holds the header length in 16 bits
    return Status::Invalid(fmt::format("{}: a shape of {} dimensions needs a {}-byte .npy header, more than the 65535 "
                                       "bytes the format holds; not exported", file.string(), t.shape.size(),
                                       header.size() + 11));
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

// The index.json entry of one exported record: where it is and the record's identity, so that a reader
// (src/sources/export_source.cpp) gives it back the name, rank, step and order it had in the run.
nlohmann::json index_entry(const Record& r, const fs::path& file, const fs::path& out_dir, const std::string& key) {
  nlohmann::json e = {{"name", r.name.str()}, {"rank", r.rank}, {"step", r.step}, {"order", r.order},
                      {"dtype", dtype_name(r.dtype)}, {"file", fs::relative(file, out_dir).string()},
                      {"module", r.module.str()}, {"op", r.op.str()}, {"direction", r.direction.str()},
                      {"role", r.role.str()}, {"index", r.index}};
  if (!key.empty()) e["key"] = key;
  return e;
}

using Groups = std::map<std::pair<int, int64_t>, std::vector<const Record*>>;

// Writes index.json last: it lists only what was written. A failed write is a problem, not an error
// (the tensor files are there; the index of them is not).
void write_index(const RunReader& run, const char* format, nlohmann::json tensors, const fs::path& out_dir,
                 ExportSummary& sum) {
  const nlohmann::json index = {{"schema", schemas::kExport.id}, {"format", format}, {"run", run.describe()},
                                {"tensors", std::move(tensors)}};
  const std::string text = json_text(index, 1);
  if (Status st = write_file(out_dir / "index.json", {{text.data(), text.size()}}); !st.ok())
    sum.problems.push_back(st);
  else
    sum.files.push_back((out_dir / "index.json").string());
}

Result<ExportSummary> export_npy(const RunReader& run, const std::map<const Record*, fs::path>& npy_targets,
                                 const fs::path& out_dir) {
  ExportSummary sum;
  nlohmann::json tensors = nlohmann::json::array();
  std::vector<std::string> failed;
  for (auto& [r, f] : npy_targets) {
    auto t = run.load(*r);
    Status st = t.ok() ? make_inner_dirs(out_dir, npy_dir(r->rank, r->step)) : t.status();
    if (st.ok()) st = write_npy(f, *t);
    if (!st.ok()) {
      sum.problems.push_back(Status(st.code(), fmt::format("tensor \"{}\" (rank {}, step {}): {}", r->name, r->rank,
                                                           r->step, st.message())));
      failed.push_back(r->name);
      continue;
    }
    ++sum.tensors;
    sum.bytes += static_cast<uint64_t>(t->nbytes());
    sum.files.push_back(f.string());
    tensors.push_back(index_entry(*r, f, out_dir, ""));
  }
  if (sum.tensors == 0 && !sum.problems.empty()) return nothing_exported(out_dir, failed, sum.problems.front());
  write_index(run, "npy", std::move(tensors), out_dir, sum);
  return sum;
}

// One rank<R>_step<S>.safetensors: its tensors are appended to `tensors` (the index) when it is written.
void export_safetensors_file(const RunReader& run, const std::pair<int, int64_t>& rank_step,
                             const std::vector<const Record*>& recs, const fs::path& f, const fs::path& out_dir,
                             ExportSummary& sum, nlohmann::json& tensors, std::vector<std::string>& failed) {
  nlohmann::json header = nlohmann::json::object();
  nlohmann::json renamed = nlohmann::json::object();
  nlohmann::json entries = nlohmann::json::array();
  std::vector<TensorView> views;
  std::vector<std::string> names;
  uint64_t offset = 0;
  for (const Record* r : recs) {
    auto t = run.load(*r);
    if (!t.ok()) {
      sum.problems.push_back(t.status());
      failed.push_back(r->name);
      continue;
    }
    // Keys are unique: "__metadata__" is the format's own, and two records of one name would be one key.
    std::string key_name = r->name;
    for (int k = 1; key_name == "__metadata__" || header.contains(key_name); ++k)
      key_name = fmt::format("{}~{}", r->name.str(), k);
    if (key_name != r->name) renamed[key_name] = r->name.str();
    const uint64_t n = static_cast<uint64_t>(t->nbytes());
    header[key_name] = {{"dtype", st_dtype(r->dtype)}, {"shape", r->shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
    views.push_back(*t);
    names.push_back(r->name);
    entries.push_back(index_entry(*r, f, out_dir, key_name));
  }
  header["__metadata__"] = {{"format", "pt"}, {"source", "parity"}, {"rank", std::to_string(rank_step.first)},
                            {"step", std::to_string(rank_step.second)}};
  if (!renamed.empty()) header["__metadata__"]["parity.renamed"] = renamed.dump();  // key -> record name
  std::string htext = json_text(header);
  htext.append((8 - htext.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  const uint64_t hlen = htext.size();
  unsigned char len8[8];
  for (int i = 0; i < 8; ++i) len8[i] = static_cast<unsigned char>((hlen >> (8 * i)) & 0xFF);
  std::vector<std::pair<const void*, size_t>> pieces = {{len8, 8}, {htext.data(), htext.size()}};
  for (const TensorView& v : views) pieces.emplace_back(v.data, static_cast<size_t>(v.nbytes()));
  if (Status st = write_file(f, pieces); !st.ok()) {
    sum.problems.push_back(Status(st.code(), fmt::format("{} (its {} tensors are not exported)", st.message(),
                                                         views.size())));
    failed.insert(failed.end(), names.begin(), names.end());
    return;
  }
  sum.tensors += views.size();
  sum.bytes += offset;
  sum.files.push_back(f.string());
  for (auto& e : entries) tensors.push_back(std::move(e));
}

fs::path safetensors_file(const fs::path& out_dir, const std::pair<int, int64_t>& rank_step) {
  return out_dir / fmt::format("rank{}_step{}.safetensors", rank_step.first, rank_step.second);
}

Result<ExportSummary> export_safetensors(const RunReader& run, const Groups& groups, const fs::path& out_dir) {
  ExportSummary sum;
  nlohmann::json tensors = nlohmann::json::array();
  std::vector<std::string> failed;
  for (auto& [key, recs] : groups)
    export_safetensors_file(run, key, recs, safetensors_file(out_dir, key), out_dir, sum, tensors, failed);
  if (sum.tensors == 0 && !sum.problems.empty()) return nothing_exported(out_dir, failed, sum.problems.front());
  write_index(run, "safetensors", std::move(tensors), out_dir, sum);
  return sum;
}

// The .npy file of each record, names made unique within their (rank, step) folder.
std::map<const Record*, fs::path> plan_npy(const Groups& groups, const fs::path& out_dir) {
  std::map<const Record*, fs::path> targets;
  for (auto& [key, recs] : groups) {
    std::set<std::string> used;
    for (const Record* r : recs) {
      std::string base = sanitise(r->name);
      std::string cand = base;
      for (int k = 1; used.count(cand); ++k) cand = fmt::format("{}~{}", base, k);
      used.insert(cand);
      targets[r] = out_dir / npy_dir(key.first, key.second) / (cand + ".npy");
    }
  }
  return targets;
}

}  // namespace

Result<ExportSummary> export_run(const RunReader& run, const std::string& format, const fs::path& out_dir) {
  if (format != "npy" && format != "safetensors")
    return Status::Invalid(fmt::format("export format \"{}\" is not one of npy, safetensors", format));
  // Plan every target file first so that an existing one stops us before anything is written.
  Groups groups;
  for (const Record& r : run.records())
    if (r.has_data) groups[{r.rank, r.step}].push_back(&r);
  if (groups.empty())
    return Status::NotFound(fmt::format("{}: no record has tensor data (capture with mode=\"tensor\" to export)",
                                        run.describe()));
  std::map<const Record*, fs::path> npy_targets;
  std::vector<fs::path> targets;
  if (format == "npy") {
    npy_targets = plan_npy(groups, out_dir);
    for (auto& [r, f] : npy_targets) targets.push_back(f);
  } else {
    for (auto& [key, recs] : groups) targets.push_back(safetensors_file(out_dir, key));
  }
  targets.push_back(out_dir / "index.json");
  for (const fs::path& f : targets) {
    if (entry_kind(f))  // lstat: a dangling link is there too
      return Status::Invalid(fmt::format("{}: already exists; export never overwrites (choose an empty directory)",
                                         f.string()));
  }
  if (format == "npy")
    for (auto& [key, recs] : groups) {  // the folders the npy layout creates inside out_dir
      PARITY_RETURN_NOT_OK(check_inner_dir(out_dir / fmt::format("rank{}", key.first), out_dir));
      PARITY_RETURN_NOT_OK(check_inner_dir(out_dir / npy_dir(key.first, key.second), out_dir));
    }
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return Status::IOError(fmt::format("{}: cannot create: {}", out_dir.string(), ec.message()));
  return format == "npy" ? export_npy(run, npy_targets, out_dir) : export_safetensors(run, groups, out_dir);
}

}  // namespace parity::dump
