// .npy reading: numpy-written files of every dtype numpy writes that parity maps (both byte orders,
// C and Fortran order, format versions 1.0/2.0/3.0, 0-d and empty arrays), and every kind of bad header.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "formats/test_util.h"
#include "parity/open_source.h"

namespace {

using namespace parity_test;

// The reference array every generated file holds: a = (arange(24) % 7) - 3, shape (2, 3, 4); unsigned
// types take a % 7 + 3 (no negatives), bool takes a % 2 != 0 (i.e. arange odd entries of the pattern).
std::vector<double> expected(const std::string& code) {
  std::vector<double> v;
  for (int i = 0; i < 24; ++i) {
    const int a = i % 7 - 3;
    if (code == "u1") v.push_back(a + 3);
    else if (code == "b1") v.push_back((a + 3) % 2 != 0 ? 1 : 0);
    else v.push_back(a);
  }
  return v;
}

const char* kCodes[] = {"f8", "f4", "f2", "i1", "i2", "i4", "i8", "u1", "b1"};
const char* kDTypes[] = {"f64", "f32", "f16", "i8", "i16", "i32", "i64", "u8", "bool"};

class NumpyFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const int rc = run_python(dir_->path(), R"PY(
base = (np.arange(24) % 7 - 3).reshape(2, 3, 4)
for code in ['f8', 'f4', 'f2', 'i1', 'i2', 'i4', 'i8', 'u1', 'b1']:
    a = base + 3 if code == 'u1' else ((base + 3) % 2 != 0 if code == 'b1' else base)
    for order in '<>':
        dt = np.dtype(order + code) if code not in ('i1', 'u1', 'b1') else np.dtype(code)
        arr = a.astype(dt)
        np.save(f'c_{code}_{order == "<" and "le" or "be"}.npy', arr)
        np.save(f'f_{code}_{order == "<" and "le" or "be"}.npy', np.asfortranarray(arr))
for ver in [(1, 0), (2, 0), (3, 0)]:
    with open(f'v{ver[0]}.npy', 'wb') as f:
        np.lib.format.write_array(f, base.astype('<f4'), version=ver)
np.save('zero_d.npy', np.float32(2.5))
np.save('empty.npy', np.zeros((0, 3), dtype='<f4'))
np.save('one.npy', np.array([7], dtype='<i4'))
)PY");
    ASSERT_EQ(rc, 0);
  }
  static void TearDownTestSuite() { delete dir_; }
  static TempDir* dir_;
};
TempDir* NumpyFiles::dir_ = nullptr;

TEST_F(NumpyFiles, EveryDTypeBothByteOrdersBothLayouts) {
  for (size_t i = 0; i < std::size(kCodes); ++i) {
    for (const char* layout : {"c", "f"}) {
      for (const char* order : {"le", "be"}) {
        const std::string file = std::string(layout) + "_" + kCodes[i] + "_" + order + ".npy";
        auto src = parity::open_source(dir_->path() / file);
        ASSERT_TRUE(src.ok()) << src.status().ToString();
        ASSERT_EQ((*src)->records().size(), 1u);
        const parity::Record& r = (*src)->records()[0];
        EXPECT_EQ(r.name, file);
        EXPECT_EQ(r.file, (dir_->path() / file).string());
        EXPECT_STREQ(parity::dtype_name(r.dtype), kDTypes[i]) << file;
        EXPECT_EQ(r.shape, (parity::Shape{2, 3, 4}));
        EXPECT_TRUE(r.has_data);
        auto v = (*src)->load(r);
        ASSERT_TRUE(v.ok()) << v.status().ToString();
        EXPECT_EQ(v->byteswapped, std::string(order) == "be" && parity::dtype_size(r.dtype) > 1) << file;
        EXPECT_EQ(v->is_c_contiguous(), std::string(layout) == "c") << file;
        EXPECT_EQ(values_of(*v), expected(kCodes[i])) << file;
      }
    }
  }
}

TEST_F(NumpyFiles, FormatVersions123) {
  for (const char* f : {"v1.npy", "v2.npy", "v3.npy"}) {
    auto src = parity::open_source(dir_->path() / f);
    ASSERT_TRUE(src.ok()) << f << ": " << src.status().ToString();
    EXPECT_EQ(load_values(**src, f), expected("f4")) << f;
  }
  // The version bytes really differ (guards against numpy silently writing 1.0).
  EXPECT_EQ(read_file(dir_->path() / "v2.npy")[6], '\x02');
  EXPECT_EQ(read_file(dir_->path() / "v3.npy")[6], '\x03');
}

TEST_F(NumpyFiles, ZeroDEmptyAndSingleElement) {
  auto z = parity::open_source(dir_->path() / "zero_d.npy");
  ASSERT_TRUE(z.ok());
  EXPECT_TRUE((*z)->records()[0].shape.empty());
  EXPECT_EQ(load_values(**z, "zero_d.npy"), std::vector<double>{2.5});
  auto e = parity::open_source(dir_->path() / "empty.npy");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->records()[0].shape, (parity::Shape{0, 3}));
  auto ev = (*e)->load((*e)->records()[0]);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->numel, 0);
  EXPECT_EQ(load_values(**parity::open_source(dir_->path() / "one.npy"), "one.npy"), std::vector<double>{7});
}

// ---- hand-written files: header variants and every way a header can be wrong ----------------------

std::string f32_data(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    const float x = static_cast<float>(i) + 0.5f;
    s.append(reinterpret_cast<const char*>(&x), 4);
  }
  return s;
}

parity::Status open_status(const fs::path& p) {
  auto s = parity::open_source(p);
  return s.ok() ? parity::Status::OK() : s.status();
}

TEST(NpyHeaders, AcceptedVariants) {
  TempDir d;
  const std::vector<std::pair<std::string, std::string>> ok = {
      {"plain.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
      {"dq.npy", "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}"},   // double quotes
      {"order.npy", "{'shape': (2,3), 'fortran_order': False, 'descr': '<f4'}"},      // key order, no spaces
      {"py2.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }"},   // Python 2 longs
      {"list.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }"},    // list instead of tuple
      {"native.npy", "{'descr': '=f4', 'fortran_order': False, 'shape': (6,), }"},    // native order
  };
  for (const auto& [name, dict] : ok) {
    write_file(d / name, npy_bytes(dict, f32_data(6)));
    auto s = parity::open_source(d / name);
    ASSERT_TRUE(s.ok()) << name << ": " << s.status().ToString();
    EXPECT_EQ(load_values(**s, name), (std::vector<double>{0.5, 1.5, 2.5, 3.5, 4.5, 5.5})) << name;
  }
  // Extra bytes after the data are ignored (numpy itself ignores them on load).
  write_file(d / "trail.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", f32_data(3)));
  EXPECT_TRUE(open_status(d / "trail.npy").ok());
}

TEST(NpyHeaders, RejectedWithFileNameAndReason) {
  TempDir d;
  const std::string good = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f32_data(6));
  struct Bad {
    std::string name, bytes, message;
    parity::StatusCode code;
  };
  const std::vector<Bad> cases = {
      {"empty.npy", "", "too short", parity::StatusCode::kInvalid},
      {"magic.npy", "\x93NUMPZ" + good.substr(6), "bad magic", parity::StatusCode::kInvalid},
      {"short_prefix.npy", good.substr(0, 9), "too short", parity::StatusCode::kInvalid},
      {"truncated_header.npy", good.substr(0, 40), "header length 118 exceeds the file size (40 bytes)",
       parity::StatusCode::kInvalid},
      {"truncated_data.npy", good.substr(0, good.size() - 5), "header claims 24 bytes of data ([2, 3] f32), file has 19",
       parity::StatusCode::kInvalid},
      {"version.npy", good.substr(0, 6) + "\x04" + good.substr(7), "version 4.0", parity::StatusCode::kUnsupported},
      {"overflow.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""),
       "overflows int64", parity::StatusCode::kInvalid},
      {"bytes_overflow.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }", ""),
       "overflows", parity::StatusCode::kInvalid},
      {"huge_int.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", ""),
       "does not fit in int64", parity::StatusCode::kInvalid},
      {"negative.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", f32_data(6)),
       "negative", parity::StatusCode::kInvalid},
      {"complex.npy", npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", f32_data(6)),
       "unsupported dtype '<c8' (complex numbers)", parity::StatusCode::kTypeError},
      {"u4.npy", npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (6,), }", f32_data(6)),
       "unsupported dtype '<u4'", parity::StatusCode::kTypeError},
      {"void.npy", npy_bytes("{'descr': '<V2', 'fortran_order': False, 'shape': (6,), }", f32_data(3)),
       "unsupported dtype '<V2' (raw void bytes", parity::StatusCode::kTypeError},
      {"structured.npy", npy_bytes("{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (3,), }", f32_data(6)),
       "structured", parity::StatusCode::kTypeError},
      {"byteorder.npy", npy_bytes("{'descr': '!f4', 'fortran_order': False, 'shape': (6,), }", f32_data(6)),
       "unknown byte order", parity::StatusCode::kTypeError},
      {"missing_key.npy", npy_bytes("{'descr': '<f4', 'shape': (6,), }", f32_data(6)), "missing key 'fortran_order'",
       parity::StatusCode::kInvalid},
      {"not_dict.npy", npy_bytes("['descr', '<f4']", f32_data(6)), "expected '{'", parity::StatusCode::kInvalid},
      {"unterminated.npy", npy_bytes("{'descr': '<f4, 'fortran_order': False}", f32_data(6)), "malformed .npy header",
       parity::StatusCode::kInvalid},
      {"garbage.npy", npy_bytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (6,)}", f32_data(6)),
       "unexpected character 'M'", parity::StatusCode::kInvalid},
      {"bool_order.npy", npy_bytes("{'descr': '<f4', 'fortran_order': 'no', 'shape': (6,)}", f32_data(6)),
       "'fortran_order' is not True/False", parity::StatusCode::kInvalid},
      {"after.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} x", f32_data(6)),
       "unexpected text after the dict", parity::StatusCode::kInvalid},
      // Issue 33 §1: a valid v1 file whose 64 KB header nests its shape 32,000 deep crashed the reader (one
      // recursion a level); the limit is checked at 64, where a v3 file's 1 M levels are no different.
      {"deep.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(32000, '(') +
                                 std::string(32000, ')') + ", }", ""),
       "containers nested more than 64 deep", parity::StatusCode::kInvalid},
      {"deep_v3.npy", npy_bytes("{'descr': [" + std::string(1 << 20, '[') + std::string(1 << 20, ']') +
                                    "], 'fortran_order': False, 'shape': (1,), }", "", 3),
       "containers nested more than 64 deep", parity::StatusCode::kInvalid},
  };
  for (const Bad& c : cases) {
    write_file(d / c.name, c.bytes);
    const parity::Status st = open_status(d / c.name);
    ASSERT_FALSE(st.ok()) << c.name;
    EXPECT_EQ(st.code(), c.code) << c.name << ": " << st.ToString();
    EXPECT_TRUE(contains(st.message(), (d / c.name).string() + ": ")) << st.message();
    EXPECT_TRUE(contains(st.message(), c.message)) << c.name << ": got \"" << st.message() << "\"";
  }
}

TEST(NpyHeaders, EveryTruncationOfAGoodFileFailsCleanly) {
  // Cut a valid file at every length: each prefix must yield an error (never a crash, never a read past
  // the end; the sanitizer build checks the latter), and the full file must load.
  TempDir d;
  const std::string good = npy_bytes("{'descr': '>f8', 'fortran_order': True, 'shape': (2, 3), }", std::string(48, '\x40'));
  for (size_t n = 0; n < good.size(); ++n) {
    write_file(d / "t.npy", good.substr(0, n));
    EXPECT_FALSE(open_status(d / "t.npy").ok()) << n;
  }
  write_file(d / "t.npy", good);
  EXPECT_TRUE(open_status(d / "t.npy").ok());
}

TEST(NpyHeaders, UnreadablePaths) {
  TempDir d;
  // Tests run as root, which reads any file regardless of mode bits: use a directory named like a
  // tensor file, and a dangling symbolic link.
  fs::create_directories(d / "dir.npy");
  auto forced = parity::open_source(d / "dir.npy", "npy");
  EXPECT_TRUE(forced.ok());  // "npy" forced on a directory reads the .npy files inside it: none
  fs::create_symlink(d / "nowhere.npy", d / "dangling.npy");
  const parity::Status st = open_status(d / "dangling.npy");
  EXPECT_EQ(st.code(), parity::StatusCode::kIOError) << st.ToString();
  EXPECT_TRUE(contains(st.message(), "dangling.npy")) << st.message();
  const parity::Status missing = open_status(d / "missing.npy");
  EXPECT_EQ(missing.code(), parity::StatusCode::kNotFound);
  EXPECT_TRUE(contains(missing.message(), "missing.npy: no such file or directory")) << missing.message();
  write_file(d / "notes.txt", "hello");
  const parity::Status unknown = open_status(d / "notes.txt");
  EXPECT_EQ(unknown.code(), parity::StatusCode::kUnsupported);
  EXPECT_TRUE(contains(unknown.message(), "notes.txt: not a tensor file")) << unknown.message();
  const parity::Status badfmt = open_status(d / "notes.txt").ok() ? parity::Status::OK()
                                                                    : parity::open_source(d / "notes.txt", "hdf5").status();
  EXPECT_TRUE(contains(badfmt.message(), "unknown format 'hdf5'")) << badfmt.message();
}

}  // namespace
