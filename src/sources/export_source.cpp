// "parity-export": a `parity export` directory (src/dump/export.cpp) read through its index.json. The
// tensor files alone would be records named "rank0/step1/layers.0__forward__output__0.npy" without a
// rank or step, pairing nothing with the run they were exported from; the index gives each one back its
// record identity. An index of the first revision (parity.export/1, npy only, no event identity) is not
// this format: such a directory is read as plain files, as before.
#include "sources/export_source.h"
#include "sources/json_file.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "parity/formats.h"
#include "parity/json_depth.h"
#include "parity/regular_file.h"
#include "parity/schemas.h"

namespace parity::sources {
namespace fs = std::filesystem;
namespace {

constexpr const char* kSchema = schemas::kExport.id;

// j[key] when it is a string, else "" (json::value() throws on a value of another type).
std::string string_field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<nlohmann::json> read_index(const fs::path& file) { return read_json_object(file); }

bool probe_export(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "index.json", ec)) return false;
  auto j = read_index(dir / "index.json");
  return j.ok() && string_field(*j, "schema") == kSchema;
}

// A file named by the index: relative, inside the export directory.
Result<fs::path> index_file(const fs::path& dir, const nlohmann::json& e) {
  const auto f = e.find("file");
  if (f == e.end() || !f->is_string()) return Status::Invalid("no \"file\"");
  const fs::path rel = f->get<std::string>();
  if (rel.empty() || rel.is_absolute()) return Status::Invalid("file \"" + rel.string() + "\" is not a relative path");
  for (const fs::path& part : rel)
    if (part == "..") return Status::Invalid("file \"" + rel.string() + "\" leaves the export directory");
  return dir / rel;
}

// The record identity an index entry gives (name, rank, step, order, event fields); has_data, dtype and
// shape come from the tensor file.
Status entry_identity(const nlohmann::json& e, Record& r) {
  if (!e.is_object()) return Status::Invalid("not a JSON object");
  const auto name = e.find("name");
  if (name == e.end() || !name->is_string()) return Status::Invalid("no \"name\"");
  for (const char* k : {"rank", "step", "order", "index"})
    if (!e.contains(k) || !e[k].is_number_integer()) return Status::Invalid(fmt::format("no integer \"{}\"", k));
  for (const char* k : {"module", "op", "direction", "role"})
    if (!e.contains(k) || !e[k].is_string()) return Status::Invalid(fmt::format("no string \"{}\"", k));
  r.name = name->get<std::string>();
  r.rank = e["rank"].get<int>();
  r.step = e["step"].get<int64_t>();
  r.order = e["order"].get<int64_t>();
  r.index = e["index"].get<int>();
  r.module = e["module"].get<std::string>();
  r.op = e["op"].get<std::string>();
  r.direction = e["direction"].get<std::string>();
  r.role = e["role"].get<std::string>();
  return Status::OK();
}

class ExportSource final : public RecordSource {
 public:
  explicit ExportSource(fs::path dir) : dir_(std::move(dir)) {}

  std::string describe() const override {
    return dir_.string() + " (parity export of " + run_ + ", " + std::to_string(records_.size()) + " tensors)";
  }
  const RecordList& records() const override { return records_; }
  const std::vector<Status>& problems() const override { return problems_; }

  Result<TensorView> load(const Record& r) const override {
    if (r.handle >= refs_.size() || records_[r.handle].name != r.name)
      return Status::NotFound(dir_.string() + ": no tensor '" + r.name + "' in this export");
    const auto [child, index] = refs_[r.handle];
    return children_[child]->load(children_[child]->records()[index]);
  }

  Status build(const nlohmann::json& index) {
    run_ = string_field(index, "run");
    const std::string format = string_field(index, "format");
    const FormatSpec* spec = format == "npy"           ? &formats::npy_format_spec()
                             : format == "safetensors" ? &formats::safetensors_format_spec()
                                                       : nullptr;
    const fs::path where = dir_ / "index.json";
    if (spec == nullptr) return Status::Invalid(where.string() + ": \"format\" is not npy or safetensors");
    const auto tensors = index.find("tensors");
    if (tensors == index.end() || !tensors->is_array()) return Status::Invalid(where.string() + ": no \"tensors\" list");
    for (size_t i = 0; i < tensors->size(); ++i) {
      const Status st = add((*tensors)[i], *spec);
      if (!st.ok()) problems_.push_back(st.WithContext(fmt::format("{}: tensors[{}]", where.string(), i)));
    }
    return Status::OK();
  }

 private:
  Status add(const nlohmann::json& e, const FormatSpec& spec) {
    Record r;
    PARITY_RETURN_NOT_OK(entry_identity(e, r));
    PARITY_ASSIGN_OR_RETURN(fs::path file, index_file(dir_, e));
    PARITY_ASSIGN_OR_RETURN(size_t child, child_of(file, spec));
    // npy: the file's one record; safetensors: the record of the entry's key.
    const std::string key = spec.one_tensor_per_file ? std::string() : string_field(e, "key");
    const RecordList& recs = children_[child]->records();
    for (size_t i = 0; i < recs.size(); ++i) {
      if (!spec.one_tensor_per_file && recs[i].name != key) continue;
      r.file = file.string();
      r.dtype = recs[i].dtype;
      r.shape = recs[i].shape;
      r.has_data = recs[i].has_data;
      r.handle = refs_.size();
      refs_.emplace_back(child, i);
      records_.push_back(std::move(r));
      return Status::OK();
    }
    return Status::NotFound(fmt::format("{}: no tensor \"{}\" in it", file.string(), key));
  }

  Result<size_t> child_of(const fs::path& file, const FormatSpec& spec) {
    if (auto it = child_by_file_.find(file.string()); it != child_by_file_.end()) return it->second;
    PARITY_ASSIGN_OR_RETURN(std::unique_ptr<RecordSource> src, spec.open(file));
    for (const Status& p : src->problems()) problems_.push_back(p);
    children_.push_back(std::move(src));
    child_by_file_[file.string()] = children_.size() - 1;
    return children_.size() - 1;
  }

  fs::path dir_;
  std::string run_;
  std::vector<std::unique_ptr<RecordSource>> children_;
  std::map<std::string, size_t> child_by_file_;
  std::vector<std::pair<size_t, size_t>> refs_;  // record handle -> (child, child record index)
  RecordList records_;
  std::vector<Status> problems_;
};

Result<std::unique_ptr<RecordSource>> open_export(const fs::path& dir) {
  PARITY_ASSIGN_OR_RETURN(nlohmann::json index, read_index(dir / "index.json"));
  if (string_field(index, "schema") != kSchema)
    return Status::Invalid((dir / "index.json").string() + ": schema is not " + kSchema);
  auto src = std::make_unique<ExportSource>(dir);
  PARITY_RETURN_NOT_OK(src->build(index));
  return std::unique_ptr<RecordSource>(std::move(src));
}

}  // namespace

const FormatSpec& export_format_spec() {
  static const FormatSpec spec{"parity-export", &probe_export, &open_export, true, false};
  return spec;
}

}  // namespace parity::sources
