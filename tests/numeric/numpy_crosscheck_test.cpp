// Cross-check fp16 encoding of random doubles (including ties and the subnormal/overflow ranges)
// against numpy's float16 cast, an independent implementation (npy_double_to_half, RNE). numpy runs in
// the project's venv python (PARITY_TEST_PYTHON); raw little-endian files are exchanged through a temporary directory.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "parity/dtype.h"

namespace {

TEST(NumpyCrossCheck, F16EncodeOfRandomDoublesMatchesNumpy) {
  char tmpl[] = "/tmp/parity_numeric_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::filesystem::path dir = tmpl;
  std::mt19937_64 rng(99);
  std::vector<double> xs;
  for (int i = 0; i < 100000; ++i) {
    const double mant = 1.0 + static_cast<double>(rng() >> 11) * 0x1p-53;
    xs.push_back(std::ldexp((rng() & 1) ? -mant : mant, static_cast<int>(rng() % 48) - 28));
  }
  // Exact f16 ties: midpoints of random adjacent pattern pairs.
  for (int i = 0; i < 20000; ++i) {
    const uint64_t b = rng() % 0x7BFF;
    xs.push_back(0.5 * (parity::decode_bits(parity::DType::kF16, b) + parity::decode_bits(parity::DType::kF16, b + 1)));
  }
  {
    std::ofstream out(dir / "x.f64", std::ios::binary);
    out.write(reinterpret_cast<const char*>(xs.data()), static_cast<std::streamsize>(xs.size() * 8));
  }
  const std::string cmd = "'" PARITY_TEST_PYTHON "' -c \"import numpy as np; np.seterr(all='ignore'); "
                          "np.fromfile('" + (dir / "x.f64").string() + "', dtype='<f8').astype('<f2').tofile('" +
                          (dir / "x.f16").string() + "')\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(dir / "x.f16", std::ios::binary);
  std::vector<uint16_t> hs(xs.size());
  in.read(reinterpret_cast<char*>(hs.data()), static_cast<std::streamsize>(hs.size() * 2));
  ASSERT_EQ(in.gcount(), static_cast<std::streamsize>(hs.size() * 2));
  int mismatches = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (parity::encode_rne(parity::DType::kF16, xs[i]) != hs[i] && ++mismatches <= 5) {
      ADD_FAILURE() << "x=" << xs[i] << " parity=0x" << std::hex << parity::encode_rne(parity::DType::kF16, xs[i])
                    << " numpy=0x" << hs[i];
    }
  }
  EXPECT_EQ(mismatches, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
