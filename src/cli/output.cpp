#include "cli/output.h"

#include <cstdio>
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

}  // namespace parity::cli
