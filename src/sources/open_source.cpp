// open_source(): from a path (and an optional forced format name) to a RecordSource.
#include <string>
#include <system_error>

#include "parity/open_source.h"
#include "sources/directory_source.h"

namespace parity {
namespace fs = std::filesystem;

namespace {

std::string known_formats() {
  std::string s;
  for (const FormatSpec& f : registered_formats()) s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s + ", directory";
}

Result<std::unique_ptr<RecordSource>> open_existing(const fs::path& path, const std::string& format) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  if (!format.empty()) {
    if (format == "directory" || format == "dir") {
      if (!is_dir) return Status::Invalid(path.string() + ": format 'directory' was forced but this is not a directory");
      return sources::open_directory_source(path);
    }
    for (const FormatSpec& f : registered_formats()) {
      if (format != f.name) continue;
      // A single-file format forced on a plain directory reads the directory's files of that format.
      if (is_dir && !f.is_directory_format) return sources::open_directory_source(path, &f);
      return f.open(path);
    }
    return Status::Invalid("unknown format '" + format + "' (known: " + known_formats() + ")");
  }
  for (const FormatSpec& f : registered_formats()) {
    if (f.is_directory_format == is_dir && f.probe(path)) return f.open(path);
  }
  if (is_dir) return sources::open_directory_source(path);
  return Status::Unsupported(path.string() + ": not a tensor file parity reads (known formats: " + known_formats() +
                             "; use --format to force one)");
}

// The multi-rank format open_source would open `path` with, or nullptr.
const FormatSpec* rank_format_of(const fs::path& path, const std::string& format) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return nullptr;
  for (const FormatSpec& f : registered_formats()) {  // the format open_existing would pick
    if (!f.is_directory_format || !(format.empty() ? f.probe(path) : format == f.name)) continue;
    return f.rank_parts != nullptr ? &f : nullptr;
  }
  return nullptr;
}

}  // namespace

std::vector<RankPart> source_rank_parts(const fs::path& path, const std::string& format) {
  const FormatSpec* f = rank_format_of(path, format);
  return f != nullptr ? f->rank_parts(path) : std::vector<RankPart>{};
}

Result<std::unique_ptr<RecordSource>> open_source_ranks(const fs::path& path, const std::string& format,
                                                        const std::vector<int>& ranks) {
  const FormatSpec* f = rank_format_of(path, format);
  if (f == nullptr || f->open_ranks == nullptr)
    return Status::Unsupported(path.string() + ": not a capture with one part per rank");
  return f->open_ranks(path, ranks);
}

Result<std::unique_ptr<RecordSource>> open_source(const fs::path& path, const std::string& format) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st)) return open_existing(path, format);
  // "FILE:KEY" selects one record of an existing FILE (keys may themselves contain ':', file names
  // rarely do, so the first ':' after which the prefix exists wins).
  const std::string s = path.string();
  for (size_t colon = s.find(':'); colon != std::string::npos; colon = s.find(':', colon + 1)) {
    const fs::path file = s.substr(0, colon);
    if (!fs::exists(fs::status(file, ec))) continue;
    PARITY_ASSIGN_OR_RETURN(std::unique_ptr<RecordSource> inner, open_existing(file, format));
    return sources::select_record(std::move(inner), s.substr(colon + 1));
  }
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    return Status::IOError(s + ": cannot open: dangling symbolic link");
  }
  return Status::NotFound(s + ": no such file or directory");
}

}  // namespace parity
