// MappedFile: open + fstat + mmap(PROT_READ, MAP_SHARED), munmap on destruction.
#include "formats/mapped_file.h"
#include "parity/regular_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace parity::formats {

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  PARITY_ASSIGN_OR_RETURN(const RegularFile file, open_regular_file(path));  // never opens a FIFO
  const int fd = file.fd;
  const uint64_t size = file.size;
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
