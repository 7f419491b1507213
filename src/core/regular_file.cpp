// src/core/regular_file.cpp — stat, refuse what is not a regular file, then open (parity/regular_file.h).
#include "parity/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace parity {

namespace {

Status not_regular(const std::filesystem::path& path, mode_t mode) {
  if (S_ISDIR(mode)) return Status::IOError(fmt::format("{}: is a directory, not a file", path.string()));
  const char* kind = S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket" : S_ISCHR(mode) || S_ISBLK(mode) ? "a device" : "not a plain file";
  return Status::IOError(fmt::format("{}: not a regular file ({}); not read", path.string(), kind));
}

}  // namespace

Status check_regular_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return Status::IOError(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  return S_ISREG(st.st_mode) ? Status::OK() : not_regular(path, st.st_mode);
}

Result<RegularFile> open_regular_file(const std::filesystem::path& path) {
  PARITY_RETURN_NOT_OK(check_regular_file(path));
  struct stat st {};
  // O_NONBLOCK: should the path be swapped for a FIFO after the stat, the open still returns at once.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::IOError(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::IOError(fmt::format("{}: cannot stat: {}", path.string(), std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return not_regular(path, st.st_mode);
  }
  return RegularFile{fd, static_cast<uint64_t>(st.st_size)};
}

}  // namespace parity
