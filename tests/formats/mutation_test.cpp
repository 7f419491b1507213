// Robustness: valid .npy / .npz / .safetensors files with bytes overwritten at random (fixed seed) must
// open and load without crashing or reading out of bounds: each either works or yields an error that
// names the file. Run under the sanitizer build (PARITY_SANITIZE) to catch out-of-bounds reads.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "formats/test_util.h"
#include "parity/open_source.h"

namespace {

using namespace parity_test;

// Opens `p`, loads and decodes every record; every failure must mention the file.
void exercise(const fs::path& p) {
  auto s = parity::open_source(p);
  if (!s.ok()) {
    EXPECT_TRUE(contains(s.status().message(), p.string())) << s.status().message();
    return;
  }
  for (const parity::Status& st : (*s)->problems()) EXPECT_TRUE(contains(st.message(), p.string())) << st.message();
  for (const parity::Record& r : (*s)->records()) {
    auto v = (*s)->load(r);
    if (!v.ok()) {
      EXPECT_TRUE(contains(v.status().message(), p.string())) << v.status().message();
      continue;
    }
    std::vector<double> out(static_cast<size_t>(std::min<int64_t>(v->numel, 1 << 16)));
    parity::decode_to_double(*v, 0, static_cast<int64_t>(out.size()), out.data());
  }
}

TEST(Mutation, RandomByteDamageNeverCrashes) {
  TempDir d;
  ASSERT_EQ(run_python(d.path(), R"PY(
a = np.arange(60, dtype='>f8').reshape(3, 4, 5)
np.save('a.npy', np.asfortranarray(a))
np.savez('s.npz', x=a, y=np.arange(7, dtype='<i2'))
np.savez_compressed('c.npz', x=a, y=np.arange(7, dtype='<i2'))
hdr = b'{"x": {"dtype": "BF16", "shape": [3, 4], "data_offsets": [0, 24]}, "y": {"dtype": "F8_E4M3", "shape": [5], "data_offsets": [24, 29]}}'
with open('t.safetensors', 'wb') as f:
    f.write(len(hdr).to_bytes(8, 'little') + hdr + bytes(range(29)))
)PY"),
            0);
  std::mt19937 rng(2024);
  for (const char* name : {"a.npy", "s.npz", "c.npz", "t.safetensors"}) {
    const std::string good = read_file(d / name);
    ASSERT_FALSE(good.empty()) << name;
    const fs::path p = d / (std::string("m_") + name);
    for (int trial = 0; trial < 60; ++trial) {
      std::string bad = good;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < flips; ++k) {
        // Bias damage towards headers (the first 200 bytes and the zip directory at the end).
        const size_t pos = (rng() % 2) ? rng() % std::min<size_t>(200, bad.size())
                                       : bad.size() - 1 - rng() % std::min<size_t>(120, bad.size());
        bad[pos] = static_cast<char>(rng() & 0xFF);
      }
      write_file(p, bad);
      exercise(p);
    }
  }
}

}  // namespace
