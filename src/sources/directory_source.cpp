// Directory-of-tensor-files source and the single-record selection wrapper.
#include "sources/directory_source.h"

#include <algorithm>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "parity/open_source.h"

namespace parity::sources {
namespace fs = std::filesystem;
namespace {

class DirectorySource final : public RecordSource {
 public:
  explicit DirectorySource(fs::path root, std::string only) : root_(std::move(root)), only_(std::move(only)) {}

  std::string describe() const override {
    return root_.string() + " (directory of " + (only_.empty() ? std::string("tensor files") : only_ + " files") + ", " +
           std::to_string(children_.size()) + " files)";
  }
  const RecordList& records() const override { return records_; }
  const std::vector<Status>& problems() const override { return problems_; }

  Result<TensorView> load(const Record& r) const override {
    if (r.handle >= refs_.size() || records_[r.handle].name != r.name) {
      return Status::NotFound(root_.string() + ": no tensor '" + r.name + "' in this directory");
    }
    const auto [child, index] = refs_[r.handle];
    return children_[child]->load(children_[child]->records()[index]);
  }

  // Lists the whole tree.
  void build(const std::vector<const FormatSpec*>& formats) {
    std::vector<std::pair<std::string, fs::path>> files;  // (relative path, full path)
    walk(root_, "", files);
    std::sort(files.begin(), files.end());
    for (const auto& [rel, full] : files) {
      const FormatSpec* spec = nullptr;
      for (const FormatSpec* f : formats) {
        if (f->probe(full)) {
          spec = f;
          break;
        }
      }
      if (spec == nullptr) continue;  // not a tensor file parity reads
      Result<std::unique_ptr<RecordSource>> child = spec->open(full);
      if (!child.ok()) {
        problems_.push_back(child.status());
        continue;
      }
      const size_t ci = children_.size();
      children_.push_back(std::move(child).value());
      const RecordSource& c = *children_.back();
      for (const Status& p : c.problems()) problems_.push_back(p);
      const RecordList& recs = c.records();
      for (size_t i = 0; i < recs.size(); ++i) {
        Record r = recs[i];
        r.name = spec->one_tensor_per_file ? rel : rel + ":" + recs[i].name;
        r.handle = refs_.size();
        r.order = static_cast<int64_t>(records_.size());
        refs_.emplace_back(ci, i);
        records_.push_back(std::move(r));
      }
    }
  }

 private:
  void walk(const fs::path& dir, const std::string& rel, std::vector<std::pair<std::string, fs::path>>& out) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
      problems_.push_back(Status::IOError(dir.string() + ": cannot list directory: " + ec.message()));
      return;
    }
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      const fs::path& p = it->path();
      const std::string child_rel = rel.empty() ? p.filename().string() : rel + "/" + p.filename().string();
      std::error_code sec;
      const fs::file_status ls = it->symlink_status(sec);
      if (!sec && fs::is_directory(ls)) {
        walk(p, child_rel, out);
        continue;
      }
      // Symlinks to directories are not followed (a link cycle would never end); anything else that
      // is not a directory is a candidate file, including dangling links, so that a broken link named
      // like a tensor file is reported rather than silently missing.
      std::error_code tec;
      if (fs::is_symlink(ls) && fs::is_directory(fs::status(p, tec))) continue;
      out.emplace_back(child_rel, p);
    }
    if (ec) problems_.push_back(Status::IOError(dir.string() + ": error while listing directory: " + ec.message()));
  }

  fs::path root_;
  std::string only_;
  std::vector<std::unique_ptr<RecordSource>> children_;
  std::vector<std::pair<size_t, size_t>> refs_;  // record handle -> (child, child record index)
  RecordList records_;
  std::vector<Status> problems_;
};

class SelectedSource final : public RecordSource {
 public:
  SelectedSource(std::unique_ptr<RecordSource> inner, Record r) : inner_(std::move(inner)) {
    inner_handle_ = r.handle;
    r.handle = 0;
    r.order = 0;
    records_.push_back(std::move(r));
  }
  std::string describe() const override { return inner_->describe() + " [" + records_[0].name + "]"; }
  const RecordList& records() const override { return records_; }
  const std::vector<Status>& problems() const override { return inner_->problems(); }
  Result<TensorView> load(const Record& r) const override {
    Record inner = r;
    inner.handle = inner_handle_;
    return inner_->load(inner);
  }
  std::optional<std::string> fingerprint_json() const override { return inner_->fingerprint_json(); }
  std::string op_arguments_json(const Record& r) const override {
    Record inner = r;
    inner.handle = inner_handle_;
    return inner_->op_arguments_json(inner);
  }
  NativeRecordInfo native_info(const Record& r) const override {
    Record inner = r;
    inner.handle = inner_handle_;
    return inner_->native_info(inner);
  }

 private:
  std::unique_ptr<RecordSource> inner_;
  uint64_t inner_handle_ = 0;
  RecordList records_;
};

}  // namespace

Result<std::unique_ptr<RecordSource>> open_directory_source(const fs::path& root, const FormatSpec* only) {
  std::vector<const FormatSpec*> formats;
  for (const FormatSpec& f : registered_formats()) {
    if (f.is_directory_format) continue;
    if (only != nullptr && std::string(f.name) != only->name) continue;
    formats.push_back(&f);
  }
  auto src = std::make_unique<DirectorySource>(root, only ? only->name : "");
  src->build(formats);
  return std::unique_ptr<RecordSource>(std::move(src));
}

Result<std::unique_ptr<RecordSource>> select_record(std::unique_ptr<RecordSource> inner, const std::string& key) {
  const RecordList& recs = inner->records();
  for (const Record& r : recs) {
    if (r.name == key) return std::unique_ptr<RecordSource>(std::make_unique<SelectedSource>(std::move(inner), r));
  }
  std::string names;
  for (size_t i = 0; i < recs.size() && i < 8; ++i) names += (i ? ", " : "") + recs[i].name;
  if (recs.size() > 8) names += ", ...";
  return Status::NotFound(inner->describe() + ": no tensor named '" + key + "'" +
                          (recs.empty() ? std::string(" (it has none)") : " (it has " + names + ")"));
}

}  // namespace parity::sources
