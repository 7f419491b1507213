// parity/regular_file.h — how every reader opens an input file: only a regular file is opened.
// Opening a FIFO for reading blocks until some writer opens it (forever, for a planted `b.npy` FIFO),
// so a FIFO, socket, device or directory is refused from its stat() without being opened.
#pragma once

#include <cstdint>
#include <filesystem>

#include "parity/status.h"

namespace parity {

struct RegularFile {
  int fd = -1;        // open read-only (O_CLOEXEC); the caller closes it
  uint64_t size = 0;  // bytes, from fstat of that descriptor
};

// Errors name the file: "<path>: cannot open: <errno text>", "<path>: is a directory, not a file",
// "<path>: not a regular file (a FIFO); not read".
Result<RegularFile> open_regular_file(const std::filesystem::path& path);
// The same check from stat() alone, for readers that open the file themselves (std::ifstream).
Status check_regular_file(const std::filesystem::path& path);

}  // namespace parity
