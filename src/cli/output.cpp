#include "cli/output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace parity::cli {

Status write_output(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return Status::OK();
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IOError(path + ": cannot open for writing");
  out << text;
  out.close();
  return out ? Status::OK() : Status::IOError(path + ": error while writing");
}

Status write_output(const std::string& path, const std::function<Status(std::FILE*)>& write) {
  if (path == "-") {
    Status st = write(stdout);
    std::fflush(stdout);
    return st;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::IOError(path + ": cannot open for writing: " + std::strerror(errno));
  Status st = write(f);
  const bool closed = std::fclose(f) == 0;
  if (!st.ok()) return st.WithContext(path);
  return closed ? Status::OK() : Status::IOError(path + ": error while writing: " + std::strerror(errno));
}

}  // namespace parity::cli
