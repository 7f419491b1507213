// MappedFile: open + fstat + mmap(PROT_READ, MAP_SHARED), munmap on destruction.
#include "formats/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace parity::formats {

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(name + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::IOError(name + ": cannot stat: " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::IOError(name + ": is a directory, not a tensor file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::IOError(name + ": not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const std::byte* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Status::IOError(name + ": cannot memory-map " + std::to_string(size) + " bytes: " + std::strerror(err));
    }
    data = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping stays valid after the descriptor is closed (POSIX mmap)
  return std::shared_ptr<const MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace parity::formats
