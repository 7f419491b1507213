// parity/tensor.h — a read-only, typed view of tensor bytes that live somewhere else
// (a memory-mapped file, a decompressed archive member, a numpy array handed over by Python).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
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

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Summary statistics of one tensor, or of one side of a compared pair (PairMetrics::golden / target,
// parity/metrics.h): the one statistics struct. Who fills it:
//   - compute_stats (below) and dump::fused_stats (capture) measure a tensor's data;
//   - readers of statistics-only dumps return what was stored (capture manifests' "stats", msprobe's
//     Max/Min/Mean/Norm);
//   - compare_tensors measures each side of a pair in its fused pass.
// Its conventions, the same whoever fills it:
//   - NaN and ±Inf are counted and excluded from min, max, mean, l2norm, std and absmax.
//   - NaN (the default) is "not measured": std outside compare_tensors, a value a stored source does not
//     hold. Counts have no such spelling: one a source does not hold reads 0 (an msprobe dump holds
//     Max/Min/Mean/Norm and no counts). Over no finite element at all a
//     pair's side keeps NaN; compute_stats and fused_stats publish 0 there (set_no_finite_values), the
//     spelling statistics dumps and parity.compare/1 `rows[].stats` have always carried.
//   - inf_count is the number of ±Inf elements, always filled. pinf_count / ninf_count split it where the
//     values were seen (compute_stats, compare_tensors); a source that holds only the total (capture
//     manifests' "inf", fused_stats) leaves both 0, so the split is known exactly when they add up to
//     inf_count (inf_split_known()).
//   - subnormal_count counts nonzero finite values below the smallest normal of the dtype they were
//     measured against: the tensor's own (compute_stats, fused_stats, statistics dumps), or for a side of
//     a compared pair the target's, so that both sides are measured against one bound (docs/metrics.md).
// Trivially copyable: row_exchange and stats_exchange send it as bytes between ranks.
struct TensorStats {
  double min = kNaN, max = kNaN, mean = kNaN, l2norm = kNaN, std = kNaN, absmax = kNaN;
  int64_t numel = 0;
  int64_t nan_count = 0;
  int64_t inf_count = 0, pinf_count = 0, ninf_count = 0;
  int64_t zero_count = 0, subnormal_count = 0;

  bool inf_split_known() const { return pinf_count + ninf_count == inf_count; }
};

// What compute_stats and fused_stats report for a tensor without a finite element: min, max, mean,
// l2norm and absmax 0 (std stays NaN: they do not measure it). Published so (statistics dumps,
// parity.compare/1 `rows[].stats`); a pair's side says NaN instead (parity/metrics.h).
inline void set_no_finite_values(TensorStats& s) { s.min = s.max = s.mean = s.l2norm = s.absmax = 0; }

TensorStats compute_stats(const TensorView& t);

}  // namespace parity
