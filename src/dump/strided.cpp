// Strided tensors in logical (C-contiguous) order: the statistics and the bytes of a non-contiguous tensor
// (a transpose, a slice, a broadcast view) without asking the framework for a contiguous copy
// (parity/dump.h, fused_stats_strided and gather_contiguous).
#include <algorithm>
#include <cstring>
#include <vector>

#include "parity/dump.h"

namespace parity::dump {
namespace {

// Dimensions of size 1 dropped and neighbours merged where one steps over the other exactly
// (stride[i] == stride[i+1] * shape[i+1]): a transpose of a [B, H, T, D] tensor becomes 3 dimensions with
// a contiguous innermost run of D, and a contiguous tensor one dimension of stride 1.
struct Layout {
  std::vector<int64_t> shape, stride;
  int64_t numel = 1;
};

Layout collapse(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride) {
  Layout l;
  for (size_t i = 0; i < shape.size(); ++i) {
    l.numel *= shape[i];
    if (shape[i] == 1) continue;
    if (!l.shape.empty() && l.stride.back() == stride[i] * shape[i]) {
      l.shape.back() *= shape[i];
      l.stride.back() = stride[i];
    } else {
      l.shape.push_back(shape[i]);
      l.stride.push_back(stride[i]);
    }
  }
  if (l.shape.empty()) {  // a single element (or none)
    l.shape.push_back(std::max<int64_t>(l.numel, 0));
    l.stride.push_back(1);
  }
  return l;
}

template <size_t kElem>
void copy_run(const std::byte* src, int64_t step, int64_t n, std::byte* out) {
  if (step == 1) {
    std::memcpy(out, src, static_cast<size_t>(n) * kElem);
    return;
  }
  for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * kElem, src + i * step * static_cast<int64_t>(kElem), kElem);
}

// Every element of `l` in logical order into `out`: the innermost dimension as runs, the outer ones
// stepped like an odometer.
template <size_t kElem>
void gather(const Layout& l, const std::byte* first, std::byte* out) {
  const size_t dims = l.shape.size();
  const int64_t inner = l.shape.back(), step = l.stride.back();
  std::vector<int64_t> index(dims, 0);
  const std::byte* src = first;
  for (int64_t done = 0; done < l.numel; done += inner) {
    copy_run<kElem>(src, step, inner, out + done * static_cast<int64_t>(kElem));
    for (size_t d = dims - 1; d-- > 0;) {  // advance the outer odometer
      if (++index[d] < l.shape[d]) {
        src += l.stride[d] * static_cast<int64_t>(kElem);
        break;
      }
      src -= (l.shape[d] - 1) * l.stride[d] * static_cast<int64_t>(kElem);
      index[d] = 0;
    }
  }
}

void gather_layout(DType dtype, const Layout& l, const void* first, void* out) {
  if (l.numel <= 0) return;
  const auto* src = static_cast<const std::byte*>(first);
  auto* dst = static_cast<std::byte*>(out);
  switch (dtype_size(dtype)) {
    case 1: gather<1>(l, src, dst); break;
    case 2: gather<2>(l, src, dst); break;
    case 4: gather<4>(l, src, dst); break;
    default: gather<8>(l, src, dst); break;
  }
}

constexpr size_t kReusedBytes = size_t{64} << 20;

}  // namespace

TensorStats fused_stats_strided(DType dtype, const void* first, const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& stride) {
  const Layout l = collapse(shape, stride);
  if (l.numel <= 0) return fused_stats(dtype, first, 0);
  if (l.shape.size() == 1 && l.stride[0] == 1) return fused_stats(dtype, first, l.numel);
  const size_t bytes = static_cast<size_t>(l.numel) * static_cast<size_t>(dtype_size(dtype));
  // The same buffer call after call: its pages stay mapped and mostly cached (a fresh allocation of a few
  // MiB is an mmap whose every page faults on first touch).
  thread_local std::vector<std::byte> reused;
  std::vector<std::byte> own;
  std::vector<std::byte>& buffer = bytes <= kReusedBytes ? reused : own;
  if (buffer.size() < bytes) buffer.resize(bytes);
  gather_layout(dtype, l, first, buffer.data());
  return fused_stats(dtype, buffer.data(), l.numel);
}

void gather_contiguous(DType dtype, const void* first, const std::vector<int64_t>& shape,
                       const std::vector<int64_t>& stride, void* out) {
  gather_layout(dtype, collapse(shape, stride), first, out);
}

}  // namespace parity::dump
