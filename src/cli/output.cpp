#include "cli/output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace parity::cli {

namespace {

// A result file is written next to its destination and renamed over it, so that no reader — and no run
// killed while writing, such as process 0 of an MPI job taken down with a dead process (docs/cli.md
// "Many processes") — ever sees half a file. A path that is not a regular file or a new name (a FIFO,
// /dev/stdout, a symbolic or hard link) is written in place, as before. `mode` receives the mode an
// existing file had, which the replacement keeps.
bool replace_atomically(const std::string& path, mode_t& mode) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    mode = 0;
    return errno == ENOENT;
  }
  mode = st.st_mode & 07777;
  return S_ISREG(st.st_mode) && st.st_nlink == 1;
}

}  // namespace

Status write_output(const std::string& path, const std::string& text) {
  return write_output(path, [&text](std::FILE* f) {
    std::fwrite(text.data(), 1, text.size(), f);
    return Status::OK();
  });
}

Status write_output(const std::string& path, const std::function<Status(std::FILE*)>& write) {
  if (path == "-") {
    Status st = write(stdout);
    std::fflush(stdout);
    return st;
  }
  mode_t mode = 0;
  const bool atomic = replace_atomically(path, mode);
  const std::string target = atomic ? path + ".parity-tmp-" + std::to_string(::getpid()) : path;
  std::FILE* f = std::fopen(target.c_str(), "wb");
  if (f == nullptr) return Status::IOError(path + ": cannot open for writing: " + std::strerror(errno));
  if (atomic && mode != 0) ::fchmod(::fileno(f), mode);
  Status st = write(f);
  const bool write_failed = std::ferror(f) != 0;
  const bool closed = std::fclose(f) == 0;
  const int err = errno;
  if (st.ok() && (write_failed || !closed))
    st = Status::IOError(path + ": error while writing: " + std::strerror(err));
  else if (!st.ok())
    st = st.WithContext(path);
  if (atomic && st.ok() && std::rename(target.c_str(), path.c_str()) != 0)
    st = Status::IOError(path + ": cannot replace: " + std::strerror(errno));
  if (atomic && !st.ok()) std::remove(target.c_str());
  return st;
}

Status distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  std::vector<std::pair<std::string, std::filesystem::path>> seen;
  for (const auto& [option, path] : outputs) {
    if (path.empty() || path == "-") continue;
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(path, ec).lexically_normal();
    std::filesystem::path where = std::filesystem::weakly_canonical(absolute, ec);  // resolves links and ".."
    if (ec) where = absolute;
    for (const auto& [other, other_where] : seen) {
      if (other_where == where) return Status::Invalid(other + " and " + option + " both write " + path);
    }
    seen.emplace_back(option, where);
  }
  return Status::OK();
}

std::vector<std::pair<std::string, std::string>> output_files(const CLI::App& sub) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const char* name : {"--json", "--csv", "--arrow", "--html", "--msprobe-csv", "--msprobe-xlsx"}) {
    const CLI::Option* option = sub.get_option_no_throw(name);
    if (option != nullptr && option->count() > 0) files.emplace_back(name, option->as<std::string>());
  }
  return files;
}

}  // namespace parity::cli
