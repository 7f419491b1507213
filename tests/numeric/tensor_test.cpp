// decode_to_double / decode_to_float over every dtype and layout (C order, Fortran order, general
// strides, byte-swapped, sub-ranges), shape_numel, dtype names, compute_stats.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "parity/dtype.h"
#include "parity/tensor.h"

namespace {

using parity::DType;

const DType kAll[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kF8E4M3, DType::kF8E5M2,
                      DType::kI8,  DType::kI16, DType::kI32, DType::kI64,  DType::kU8,     DType::kBool};

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Random element bit patterns (all patterns are legal inputs; bool bytes may be any nonzero value).
std::vector<uint64_t> random_patterns(DType t, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int bits = 8 * parity::dtype_size(t);
  std::vector<uint64_t> p(static_cast<size_t>(n));
  for (auto& v : p) v = bits == 64 ? rng() : (rng() & ((uint64_t{1} << bits) - 1));
  return p;
}

// Lay the patterns out in memory as element `i` at storage slot `slot(i)`, optionally byte-swapped.
std::vector<std::byte> layout(DType t, const std::vector<uint64_t>& p, const std::vector<int64_t>& slot,
                              int64_t slots, bool swap) {
  const int size = parity::dtype_size(t);
  std::vector<std::byte> bytes(static_cast<size_t>(slots * size));
  for (size_t i = 0; i < p.size(); ++i) {
    std::byte le[8];
    std::memcpy(le, &p[i], 8);  // little-endian host: low bytes first
    for (int b = 0; b < size; ++b) bytes[slot[i] * size + b] = swap ? le[size - 1 - b] : le[b];
  }
  return bytes;
}

void expect_decodes(const parity::TensorView& v, const std::vector<uint64_t>& p, const char* what) {
  std::vector<double> d(p.size());
  std::vector<float> f(p.size());
  parity::decode_to_double(v, 0, v.numel, d.data());
  parity::decode_to_float(v, 0, v.numel, f.data());
  for (size_t i = 0; i < p.size(); ++i) {
    const double want = parity::decode_bits(v.dtype, p[i]);
    ASSERT_TRUE(same(d[i], want)) << what << " " << parity::dtype_name(v.dtype) << " element " << i;
    ASSERT_TRUE(same(f[i], static_cast<float>(want))) << what << " " << parity::dtype_name(v.dtype) << " " << i;
  }
  // Every sub-range decodes to the same values as the whole (chunk boundaries, odometer restarts).
  for (int64_t begin : {int64_t{0}, int64_t{1}, v.numel / 3, v.numel - 1}) {
    for (int64_t count : {int64_t{1}, int64_t{7}, v.numel - begin}) {
      if (begin < 0 || count <= 0 || begin + count > v.numel) continue;
      std::vector<double> part(static_cast<size_t>(count));
      parity::decode_to_double(v, begin, count, part.data());
      for (int64_t i = 0; i < count; ++i) ASSERT_TRUE(same(part[i], d[begin + i])) << what << " range " << begin;
    }
  }
}

TEST(TensorDecode, ContiguousEveryDType) {
  for (DType t : kAll) {
    const int64_t n = 3001;  // odd: exercises vector-loop tails
    const auto p = random_patterns(t, n, 11);
    std::vector<int64_t> slot(n);
    for (int64_t i = 0; i < n; ++i) slot[i] = i;
    // Offset by one byte so the data is misaligned, as safetensors data often is.
    auto bytes = layout(t, p, slot, n, false);
    bytes.insert(bytes.begin(), std::byte{0});
    auto v = parity::make_owned_tensor(t, {n + 0}, bytes);
    v.data += 1;  // owner keeps the buffer; the extra byte at the front is skipped
    expect_decodes(v, p, "contiguous");
  }
}

TEST(TensorDecode, ByteSwappedEveryDType) {
  for (DType t : kAll) {
    const int64_t n = 1500;
    const auto p = random_patterns(t, n, 12);
    std::vector<int64_t> slot(n);
    for (int64_t i = 0; i < n; ++i) slot[i] = i;
    auto v = parity::make_owned_tensor(t, {30, 50}, layout(t, p, slot, n, true));
    v.byteswapped = true;
    expect_decodes(v, p, "byteswapped");
  }
}

TEST(TensorDecode, FortranOrderAndByteSwappedFortran) {
  for (DType t : kAll) {
    const parity::Shape shape = {7, 11, 13};
    const int64_t n = 7 * 11 * 13;
    const auto p = random_patterns(t, n, 13);
    // Logical element (i, j, k) in C order is stored at i + 7*j + 77*k (column-major).
    std::vector<int64_t> slot(n);
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 11; ++j)
        for (int64_t k = 0; k < 13; ++k) slot[(i * 11 + j) * 13 + k] = i + 7 * j + 77 * k;
    for (bool swap : {false, true}) {
      auto v = parity::make_owned_tensor(t, shape, layout(t, p, slot, n, swap));
      v.strides = {1, 7, 77};
      v.byteswapped = swap;
      EXPECT_FALSE(v.is_c_contiguous());
      expect_decodes(v, p, swap ? "fortran+swap" : "fortran");
    }
  }
}

TEST(TensorDecode, GeneralStridesWithGapsAndLongRows) {
  // A [3, 2500] view taking every other element of rows of a larger buffer: longer than the internal
  // chunk, so the odometer state crosses chunk boundaries.
  const DType t = DType::kF32;
  const int64_t rows = 3, cols = 2500, n = rows * cols;
  const auto p = random_patterns(t, n, 14);
  std::vector<int64_t> slot(n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) slot[r * cols + c] = r * 2 * cols + 2 * c;
  auto v = parity::make_owned_tensor(t, {rows * 2 * cols}, layout(t, p, slot, rows * 2 * cols, false));
  v.shape = {rows, cols};
  v.numel = n;
  v.strides = {2 * cols, 2};
  expect_decodes(v, p, "strided");
}

TEST(TensorDecode, ZeroDAndEmpty) {
  const float x = 2.5f;
  std::vector<std::byte> b(4);
  std::memcpy(b.data(), &x, 4);
  auto v = parity::make_owned_tensor(DType::kF32, {}, b);
  EXPECT_EQ(v.numel, 1);
  double d = 0;
  parity::decode_to_double(v, 0, 1, &d);
  EXPECT_EQ(d, 2.5);
  auto e = parity::make_owned_tensor(DType::kF16, {4, 0, 3}, {});
  EXPECT_EQ(e.numel, 0);
  EXPECT_EQ(e.nbytes(), 0);
  EXPECT_TRUE(e.is_c_contiguous());
  parity::decode_to_double(e, 0, 0, &d);  // nothing to do, must not touch memory
  EXPECT_EQ(d, 2.5);
}

TEST(TensorDecode, ExhaustiveF16AndBF16FastPaths) {
  for (DType t : {DType::kF16, DType::kBF16, DType::kF8E4M3, DType::kF8E5M2}) {
    const int64_t n = t == DType::kF16 || t == DType::kBF16 ? 65536 : 256;
    std::vector<uint64_t> p(n);
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint64_t>(i);
    std::vector<int64_t> slot(n);
    for (int64_t i = 0; i < n; ++i) slot[i] = i;
    auto v = parity::make_owned_tensor(t, {n}, layout(t, p, slot, n, false));
    expect_decodes(v, p, "exhaustive");
  }
}

TEST(Shape, NumelAndOverflow) {
  EXPECT_EQ(*parity::shape_numel({}), 1);
  EXPECT_EQ(*parity::shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(*parity::shape_numel({5, 0, 7}), 0);
  auto big = parity::shape_numel({int64_t{1} << 32, int64_t{1} << 32});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("overflows"), std::string::npos);
  EXPECT_NE(big.status().message().find("[4294967296, 4294967296]"), std::string::npos);
  // Overflow is detected even when a later dimension is zero would make the true product 0? No: the
  // product is evaluated left to right and a 0 first short-circuits nothing, so this must still fail.
  EXPECT_FALSE(parity::shape_numel({int64_t{1} << 62, 4, 0}).ok());
  auto neg = parity::shape_numel({3, -1});
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("negative"), std::string::npos);
  EXPECT_EQ(parity::shape_to_string({}), "[]");
  EXPECT_EQ(parity::shape_to_string({2, 3}), "[2, 3]");
}

TEST(DTypeNames, CanonicalNamesSizesAndAliases) {
  const char* names[] = {"f64", "f32", "f16", "bf16", "f8_e4m3", "f8_e5m2", "i8", "i16", "i32", "i64", "u8", "bool"};
  const int sizes[] = {8, 4, 2, 2, 1, 1, 1, 2, 4, 8, 1, 1};
  for (int i = 0; i < parity::kNumDTypes; ++i) {
    EXPECT_STREQ(parity::dtype_name(kAll[i]), names[i]);
    EXPECT_EQ(parity::dtype_size(kAll[i]), sizes[i]);
    EXPECT_EQ(parity::dtype_from_name(names[i]), kAll[i]);
    EXPECT_EQ(parity::dtype_is_float(kAll[i]), i < 6);
    EXPECT_EQ(parity::dtype_is_integer(kAll[i]), i >= 6);
  }
  EXPECT_EQ(parity::dtype_from_name("torch.float32"), DType::kF32);
  EXPECT_EQ(parity::dtype_from_name("BF16"), DType::kBF16);
  EXPECT_EQ(parity::dtype_from_name("torch.bfloat16"), DType::kBF16);
  EXPECT_EQ(parity::dtype_from_name("F8_E4M3"), DType::kF8E4M3);
  EXPECT_EQ(parity::dtype_from_name("float8_e4m3fn"), DType::kF8E4M3);
  EXPECT_EQ(parity::dtype_from_name("torch.float8_e5m2"), DType::kF8E5M2);
  EXPECT_EQ(parity::dtype_from_name("fp16"), DType::kF16);
  EXPECT_EQ(parity::dtype_from_name("torch.half"), DType::kF16);
  EXPECT_EQ(parity::dtype_from_name("int64"), DType::kI64);
  EXPECT_EQ(parity::dtype_from_name("torch.bool"), DType::kBool);
  EXPECT_FALSE(parity::dtype_from_name("f8").has_value());  // numpy's float64 code, or fp8? ambiguous
  EXPECT_FALSE(parity::dtype_from_name("complex64").has_value());
  EXPECT_FALSE(parity::dtype_from_name("").has_value());
}

TEST(IntegerEncode, RoundsHalfEvenAndSaturates) {
  EXPECT_EQ(parity::encode_rne(DType::kI8, 2.5), 2u);
  EXPECT_EQ(parity::encode_rne(DType::kI8, 3.5), 4u);
  EXPECT_EQ(parity::decode_bits(DType::kI8, parity::encode_rne(DType::kI8, -1000.0)), -128.0);
  EXPECT_EQ(parity::decode_bits(DType::kU8, parity::encode_rne(DType::kU8, 1000.0)), 255.0);
  EXPECT_EQ(parity::decode_bits(DType::kI64, parity::encode_rne(DType::kI64, 1e30)), 9223372036854775807.0);
  EXPECT_EQ(parity::encode_rne(DType::kI32, std::nan("")), 0u);
  EXPECT_EQ(parity::encode_rne(DType::kBool, 0.5), 1u);
  EXPECT_EQ(parity::decode_bits(DType::kI16, 0xFFFF), -1.0);
  EXPECT_EQ(parity::decode_bits(DType::kBool, 0x02), 1.0);
}

TEST(Stats, CountsAndExcludesNonFinite) {
  const std::vector<float> xs = {1.0f, -3.0f, 0.0f, std::nanf(""), INFINITY, -INFINITY, 2.0f, 0.0f};
  std::vector<std::byte> b(xs.size() * 4);
  std::memcpy(b.data(), xs.data(), b.size());
  const auto s = parity::compute_stats(parity::make_owned_tensor(DType::kF32, {8}, b));
  EXPECT_EQ(s.numel, 8);
  EXPECT_EQ(s.nan_count, 1);
  EXPECT_EQ(s.inf_count, 2);
  EXPECT_EQ(s.pinf_count, 1);  // the values were seen: the split is measured too (parity/tensor.h)
  EXPECT_EQ(s.ninf_count, 1);
  EXPECT_TRUE(s.inf_split_known());
  EXPECT_EQ(s.zero_count, 2);
  EXPECT_TRUE(std::isnan(s.std));  // not measured by compute_stats
  EXPECT_EQ(s.min, -3.0);
  EXPECT_EQ(s.max, 2.0);
  EXPECT_EQ(s.absmax, 3.0);
  EXPECT_DOUBLE_EQ(s.mean, 0.0 / 5 + (1.0 - 3.0 + 2.0) / 5);
  EXPECT_DOUBLE_EQ(s.l2norm, std::sqrt(14.0));
}

TEST(Stats, SubnormalsCountedInOwnDType) {
  // f16 patterns: 0x0001 (min subnormal), 0x03FF (largest subnormal), 0x0400 (min normal), 0x8001.
  const uint16_t hs[] = {0x0001, 0x03FF, 0x0400, 0x8001, 0x0000};
  std::vector<std::byte> b(sizeof hs);
  std::memcpy(b.data(), hs, sizeof hs);
  const auto s = parity::compute_stats(parity::make_owned_tensor(DType::kF16, {5}, b));
  EXPECT_EQ(s.subnormal_count, 3);
  EXPECT_EQ(s.zero_count, 1);
}

TEST(Stats, HugeF64NormDoesNotOverflowAndSumsDoNotDrift) {
  const std::vector<double> xs = {1e300, -1e300, 1e300};
  std::vector<std::byte> b(xs.size() * 8);
  std::memcpy(b.data(), xs.data(), b.size());
  const auto s = parity::compute_stats(parity::make_owned_tensor(DType::kF64, {3}, b));
  EXPECT_DOUBLE_EQ(s.l2norm, std::sqrt(3.0) * 1e300);
  // 10^6 copies of 0.1 (f32) plus a large value that cancels: compensated mean stays exact-ish.
  std::vector<float> many(1000000, 0.1f);
  std::vector<std::byte> mb(many.size() * 4);
  std::memcpy(mb.data(), many.data(), mb.size());
  const auto m = parity::compute_stats(parity::make_owned_tensor(DType::kF32, {1000000}, mb));
  EXPECT_NEAR(m.mean, static_cast<double>(0.1f), 1e-15);
  const auto empty = parity::compute_stats(parity::make_owned_tensor(DType::kF32, {0}, {}));
  EXPECT_EQ(empty.numel, 0);
  EXPECT_EQ(empty.mean, 0.0);
}

TEST(Stats, NoFiniteElementIsPublishedAsZero) {
  // The struct's default is NaN ("not measured"); compute_stats keeps the 0 that statistics dumps and
  // parity.compare/1 `rows[].stats` have always carried for a tensor without a finite value.
  const std::vector<float> xs = {std::nanf(""), -INFINITY, -INFINITY};
  std::vector<std::byte> b(xs.size() * 4);
  std::memcpy(b.data(), xs.data(), b.size());
  const auto s = parity::compute_stats(parity::make_owned_tensor(DType::kF32, {3}, b));
  for (double v : {s.min, s.max, s.mean, s.l2norm, s.absmax}) EXPECT_EQ(v, 0.0);
  EXPECT_TRUE(std::isnan(s.std));
  EXPECT_EQ(s.nan_count, 1);
  EXPECT_EQ(s.inf_count, 2);
  EXPECT_EQ(s.ninf_count, 2);
  EXPECT_EQ(s.pinf_count, 0);
  const parity::TensorStats unmeasured;
  for (double v : {unmeasured.min, unmeasured.max, unmeasured.mean, unmeasured.l2norm, unmeasured.std,
                   unmeasured.absmax})
    EXPECT_TRUE(std::isnan(v));
}

TEST(Stats, InfSplitIsKnownExactlyWhenItAddsUpToTheTotal) {
  parity::TensorStats stored;  // a capture manifest's "inf": the total only
  stored.inf_count = 3;
  EXPECT_FALSE(stored.inf_split_known());
  stored.pinf_count = 1;
  stored.ninf_count = 2;
  EXPECT_TRUE(stored.inf_split_known());
  EXPECT_TRUE(parity::TensorStats{}.inf_split_known());  // no Inf at all: the split (0, 0) is known
}

}  // namespace
