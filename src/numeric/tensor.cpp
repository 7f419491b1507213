// Shapes, owned views and per-tensor statistics (include/parity/tensor.h).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "parity/tensor.h"

#include <sys/mman.h>
#include <unistd.h>

namespace parity {

void release_pages(const TensorView& t, int64_t begin, int64_t end) {
  if (!t.file_mapped || t.byteswapped || !t.is_c_contiguous() || end <= begin) return;
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const size_t es = dtype_size(t.dtype);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(t.data) + static_cast<uintptr_t>(begin) * es;
  const uintptr_t hi = reinterpret_cast<uintptr_t>(t.data) + static_cast<uintptr_t>(end) * es;
  const uintptr_t a = (lo + page - 1) & ~(page - 1), b = hi & ~(page - 1);  // whole pages inside only
  if (b > a) (void)::madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
}

Result<int64_t> shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    if (d < 0) {
      return Status::Invalid("dimension " + std::to_string(i) + " of shape " + shape_to_string(shape) +
                             " is negative");
    }
    if (__builtin_mul_overflow(n, d, &n)) {
      return Status::Invalid("element count of shape " + shape_to_string(shape) + " overflows int64");
    }
  }
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  s += "]";
  return s;
}

bool TensorView::is_c_contiguous() const {
  if (strides.empty()) return true;
  if (strides.size() != shape.size()) return false;
  // Dimensions of extent 1 may carry any stride; a tensor with no elements is trivially contiguous.
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return true;
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

TensorView make_owned_tensor(DType dtype, Shape shape, std::vector<std::byte> bytes) {
  TensorView v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  auto n = shape_numel(v.shape);
  assert(n.ok() && "make_owned_tensor: invalid shape");
  v.numel = n.ok() ? *n : 0;
  assert(static_cast<int64_t>(bytes.size()) >= v.numel * dtype_size(dtype) &&
         "make_owned_tensor: buffer smaller than shape x dtype size");
  auto buf = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  v.data = buf->data();
  v.owner = std::shared_ptr<const void>(buf, buf->data());
  return v;
}

TensorStats compute_stats(const TensorView& t) {
  TensorStats s;
  s.numel = t.numel;
  const FloatFormat* fmt = float_format(t.dtype);
  constexpr int64_t kChunk = 4096;
  std::vector<double> buf(static_cast<size_t>(std::min<int64_t>(kChunk, std::max<int64_t>(t.numel, 1))));
  double mn = std::numeric_limits<double>::infinity(), mx = -mn, amax = 0;
  // Neumaier-compensated sums: mean and norm must not drift with the element count.
  double sum = 0, sum_c = 0, sq = 0, sq_c = 0;
  int64_t finite = 0;
  auto add = [](double& acc, double& comp, double v) {
    const double t2 = acc + v;
    comp += std::fabs(acc) >= std::fabs(v) ? (acc - t2) + v : (v - t2) + acc;
    acc = t2;
  };
  for (int64_t begin = 0; begin < t.numel; begin += kChunk) {
    const int64_t n = std::min(kChunk, t.numel - begin);
    decode_to_double(t, begin, n, buf.data());
    for (int64_t i = 0; i < n; ++i) {
      const double v = buf[i];
      if (std::isnan(v)) { ++s.nan_count; continue; }
      if (std::isinf(v)) {
        ++s.inf_count;
        ++(v > 0 ? s.pinf_count : s.ninf_count);
        continue;
      }
      ++finite;
      if (v == 0.0) ++s.zero_count;
      const double a = std::fabs(v);
      if (fmt != nullptr && v != 0.0 && a < fmt->min_normal) ++s.subnormal_count;
      mn = std::min(mn, v);
      mx = std::max(mx, v);
      amax = std::max(amax, a);
      add(sum, sum_c, v);
      add(sq, sq_c, v * v);
    }
  }
  if (finite == 0) {  // no finite element to describe: published as 0 (parity/tensor.h)
    set_no_finite_values(s);
    return s;
  }
  s.min = mn;
  s.max = mx;
  s.absmax = amax;
  s.mean = (sum + sum_c) / static_cast<double>(finite);
  double ss = sq + sq_c;
  if (!std::isfinite(ss) && amax > 0) {
    // Squares overflowed (|v| > ~1e154, only possible for f64 data): redo the norm scaled by absmax.
    ss = 0;
    double c = 0;
    for (int64_t begin = 0; begin < t.numel; begin += kChunk) {
      const int64_t n = std::min(kChunk, t.numel - begin);
      decode_to_double(t, begin, n, buf.data());
      for (int64_t i = 0; i < n; ++i) {
        if (std::isfinite(buf[i])) {
          const double r = buf[i] / amax;
          add(ss, c, r * r);
        }
      }
    }
    s.l2norm = amax * std::sqrt(ss + c);
  } else {
    s.l2norm = std::sqrt(ss);
  }
  return s;
}

}  // namespace parity
