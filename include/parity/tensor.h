// parity/tensor.h — a read-only, typed view of tensor bytes that live somewhere else
// (a memory-mapped file, a decompressed archive member, a numpy array handed over by Python).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parity/dtype.h"
#include "parity/status.h"

namespace parity {

using Shape = std::vector<int64_t>;

// Product of the dimensions, or an error when it overflows int64 or a dimension is negative.
Result<int64_t> shape_numel(const Shape& shape);
std::string shape_to_string(const Shape& shape);  // "[2, 3, 4]"

struct TensorView {
  DType dtype = DType::kF32;
  Shape shape;                 // empty = 0-d (one element)
  // Element strides of the stored layout, one per dimension. Empty means C-contiguous (row-major).
  // Fortran-order .npy files carry column-major strides here; readers never copy to reorder.
  std::vector<int64_t> strides;
  bool byteswapped = false;    // elements are stored in the non-native byte order
  const std::byte* data = nullptr;
  int64_t numel = 0;
  // Keeps the bytes alive (an mmap region, an owned buffer). Views are cheap to copy.
  std::shared_ptr<const void> owner;
  // The bytes are a read-only mapping of a file (never anonymous or heap memory): pages already read
  // may be handed back with release_pages() and fault in again from the file if read once more.
  bool file_mapped = false;

  bool is_c_contiguous() const;
  int64_t nbytes() const { return numel * dtype_size(dtype); }
};

// Decode `count` elements starting at logical (C-order) element `begin` into doubles, handling byte
// order and non-C layouts. The fast path (contiguous, native order) is a straight conversion loop.
void decode_to_double(const TensorView& t, int64_t begin, int64_t count, double* out);
// The same into floats, for kernels that work in fp32 (exact for every dtype narrower than fp32).
void decode_to_float(const TensorView& t, int64_t begin, int64_t count, float* out);

// Hand back the memory pages of C-order elements [begin, end) of a file-mapped, C-contiguous view
// (madvise MADV_DONTNEED on the whole pages inside the range); no-op for any other view. Keeps the
// resident size of a pass over a multi-GiB mapped tensor bounded by what is being read, not the
// tensor size. The data is unchanged: a later read faults the pages back in from the file.
void release_pages(const TensorView& t, int64_t begin, int64_t end);

// A view over an owned buffer (tests, Python arrays, decompressed archive members).
TensorView make_owned_tensor(DType dtype, Shape shape, std::vector<std::byte> bytes);

// Per-tensor summary statistics. Capture computes them on the device; readers of statistics-only dumps
// return them as stored; `compute_stats` derives them from data. NaN/Inf are counted and excluded from
// min/max/mean/norm. "subnormal" is counted in the tensor's own dtype.
struct TensorStats {
  double min = 0, max = 0, mean = 0, l2norm = 0, absmax = 0;
  int64_t nan_count = 0, inf_count = 0, zero_count = 0, subnormal_count = 0;
  int64_t numel = 0;
};
TensorStats compute_stats(const TensorView& t);

}  // namespace parity
