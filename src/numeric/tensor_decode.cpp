// decode_to_double / decode_to_float (include/parity/tensor.h): the hot path of the compare kernel.
//
// Contiguous native-order data goes straight through one per-dtype loop (memcpy loads, so unaligned
// mmap'd data is fine, and GCC vectorises them). Any other layout (Fortran order, general strides,
// non-native byte order) is first gathered, a chunk at a time, into a small native contiguous buffer
// and then goes through the same loops, so there is one conversion definition per dtype.
#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>
#include <vector>

#include "convert_kernels.h"
#include "parity/tensor.h"

namespace parity {
namespace {

// Float value of every fp8 pattern, from the one generic decode.
struct Fp8Tables {
  std::array<float, 256> e4m3{}, e5m2{};
  Fp8Tables() {
    for (int i = 0; i < 256; ++i) {
      e4m3[i] = static_cast<float>(decode_bits(DType::kF8E4M3, static_cast<uint64_t>(i)));
      e5m2[i] = static_cast<float>(decode_bits(DType::kF8E5M2, static_cast<uint64_t>(i)));
    }
  }
};

const Fp8Tables& fp8_tables() {
  static const Fp8Tables kTables;  // thread-safe initialisation (C++11 magic statics)
  return kTables;
}

template <typename In, typename Out>
inline void cast_loop(const std::byte* __restrict p, int64_t n, Out* __restrict out) {
  for (int64_t i = 0; i < n; ++i) {
    In v;
    std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(In)), sizeof(In));
    out[i] = static_cast<Out>(v);
  }
}

template <typename Out>
void convert_contiguous(DType t, const std::byte* __restrict p, int64_t n, Out* __restrict out) {
  switch (t) {
    case DType::kF64: cast_loop<double>(p, n, out); return;
    case DType::kF32: cast_loop<float>(p, n, out); return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Out>(detail::f16_to_f32(detail::load_u16(p + 2 * i)));
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Out>(detail::bf16_to_f32(detail::load_u16(p + 2 * i)));
      return;
    case DType::kF8E4M3: {
      const float* tab = fp8_tables().e4m3.data();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Out>(tab[static_cast<uint8_t>(p[i])]);
      return;
    }
    case DType::kF8E5M2: {
      const float* tab = fp8_tables().e5m2.data();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Out>(tab[static_cast<uint8_t>(p[i])]);
      return;
    }
    case DType::kI8: cast_loop<int8_t>(p, n, out); return;
    case DType::kI16: cast_loop<int16_t>(p, n, out); return;
    case DType::kI32: cast_loop<int32_t>(p, n, out); return;
    case DType::kI64: cast_loop<int64_t>(p, n, out); return;
    case DType::kU8: cast_loop<uint8_t>(p, n, out); return;
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(p[i]) != 0 ? Out{1} : Out{0};
      return;
  }
}

// Copies element `src` (size bytes) to `dst`, reversing the byte order when `swap`.
inline void copy_element(std::byte* dst, const std::byte* src, int size, bool swap) {
  if (!swap) {
    std::memcpy(dst, src, static_cast<size_t>(size));
  } else {
    for (int b = 0; b < size; ++b) dst[b] = src[size - 1 - b];
  }
}

template <typename Out>
void decode_general(const TensorView& t, int64_t begin, int64_t count, Out* out) {
  const int size = dtype_size(t.dtype);
  const size_t rank = t.shape.size();
  // Element strides of the stored layout (C-order when none are given).
  std::vector<int64_t> strides = t.strides;
  assert((strides.empty() || strides.size() == rank) && "TensorView: one stride per dimension");
  if (strides.empty()) {
    strides.assign(rank, 1);
    for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * t.shape[d];
  }
  // Multi-index of logical element `begin` (C order: last dimension fastest) and its storage offset.
  std::vector<int64_t> idx(rank, 0);
  int64_t offset = 0;
  {
    int64_t rest = begin;
    for (size_t d = rank; d-- > 0;) {
      const int64_t extent = t.shape[d];
      idx[d] = extent > 0 ? rest % extent : 0;
      rest = extent > 0 ? rest / extent : 0;
      offset += idx[d] * strides[d];
    }
  }
  constexpr int64_t kChunk = 1024;
  alignas(64) std::array<std::byte, kChunk * 8> buf;
  int64_t done = 0;
  while (done < count) {
    const int64_t n = std::min(kChunk, count - done);
    for (int64_t i = 0; i < n; ++i) {
      copy_element(buf.data() + i * size, t.data + offset * size, size, t.byteswapped);
      // Advance the odometer: bump the last dimension, carrying into earlier ones.
      for (size_t d = rank; d-- > 0;) {
        ++idx[d];
        offset += strides[d];
        if (idx[d] < t.shape[d]) break;
        offset -= idx[d] * strides[d];
        idx[d] = 0;
      }
    }
    convert_contiguous(t.dtype, buf.data(), n, out + done);
    done += n;
  }
}

template <typename Out>
void decode_impl(const TensorView& t, int64_t begin, int64_t count, Out* out) {
  assert(begin >= 0 && count >= 0 && begin + count <= t.numel && "decode range outside the tensor");
  if (count <= 0) return;
  if (!t.byteswapped && t.is_c_contiguous()) {
    convert_contiguous(t.dtype, t.data + begin * dtype_size(t.dtype), count, out);
    return;
  }
  decode_general(t, begin, count, out);
}

}  // namespace

void decode_to_double(const TensorView& t, int64_t begin, int64_t count, double* out) {
  decode_impl(t, begin, count, out);
}

void decode_to_float(const TensorView& t, int64_t begin, int64_t count, float* out) {
  decode_impl(t, begin, count, out);
}

}  // namespace parity
