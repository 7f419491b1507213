// The .npy format (numpy/lib/format.py, "NEP 1"): magic "\x93NUMPY", version byte pair, a little-endian
// header length (2 bytes in version 1.0, 4 bytes in 2.0 and 3.0), then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with spaces to a multiple of 64
// (16 in old files) and ended by '\n', then the raw array data. Version 3.0 only allows UTF-8 in the
// header, which this parser treats like any other bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/mapped_file.h"
#include "formats/tensor_file_source.h"
#include "parity/source.h"
#include "parity/tensor.h"

namespace parity::formats {

struct NpyHeader {
  DType dtype = DType::kF32;
  Shape shape;
  bool fortran_order = false;
  bool byteswapped = false;
  int64_t numel = 0;
  uint64_t data_offset = 0;  // bytes from the start of the .npy stream to the data
  uint64_t data_bytes = 0;   // numel * itemsize
  std::vector<int64_t> strides() const;  // column-major element strides for Fortran order, else empty
};

// Offset of the first data byte, from the magic, version and header-length field alone (needs the first
// 10 bytes for version 1.0, 12 for 2.0/3.0). Lets a caller inflate just enough of a compressed member.
Result<uint64_t> npy_header_end(ByteRange bytes);

// Parses and validates the header at the start of `bytes`. Does not check that the data is present;
// callers compare data_offset + data_bytes with what they have. Messages do not name the file.
Result<NpyHeader> parse_npy_header(ByteRange bytes);

// The listing entry of an .npy stream: what, dtype, shape, strides, byte order and element count from
// its header (storage, offset and size are the caller's: a plain file and a zip member differ there).
TensorEntry npy_entry(const NpyHeader& h, const std::string& what);

// True when `path` ends in `ext` (".npy"), ignoring case.
bool has_extension(const std::filesystem::path& path, const char* ext);

}  // namespace parity::formats
