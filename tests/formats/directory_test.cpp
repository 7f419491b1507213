// The directory source: recursive, sorted listing, names (relative path; "relpath:key" for archive
// members), unknown files skipped, bad files reported in problems() while everything else is listed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/test_util.h"
#include "parity/open_source.h"

namespace {

using namespace parity_test;

std::string f32_npy(float x, int n = 1) {
  std::string data;
  for (int i = 0; i < n; ++i) data.append(reinterpret_cast<const char*>(&x), 4);
  return npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }", data);
}

std::vector<std::string> names(const parity::RecordSource& s) {
  std::vector<std::string> out;
  for (const auto& r : s.records()) out.push_back(r.name);
  return out;
}

TEST(Directory, NamesOrderAndFormats) {
  TempDir d;
  write_file(d / "b.npy", f32_npy(2));
  write_file(d / "a.npy", f32_npy(1));
  write_file(d / "sub/deeper/c.npy", f32_npy(3));
  write_file(d / "README.md", "not a tensor");        // unknown extension: skipped silently
  write_file(d / "sub/notes.txt", "also not a tensor");
  write_file(d / "w.safetensors",
             le_bytes(64, 8) + std::string("{\"k:1\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [0, 4]}}") +
                 std::string(64 - 62, ' ') + std::string("\0\0\x80\x40", 4));
  ASSERT_EQ(run_python(d.path(), "np.savez('sub/z.npz', x=np.ones(3, dtype='<f4'), y=np.zeros(2, dtype='<i4'))"), 0);
  auto s = parity::open_source(d.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (const auto& p : (*s)->problems()) ADD_FAILURE() << p.ToString();
  EXPECT_EQ(names(**s), (std::vector<std::string>{"a.npy", "b.npy", "sub/deeper/c.npy", "sub/z.npz:x", "sub/z.npz:y",
                                                  "w.safetensors:k:1"}));
  for (size_t i = 0; i < (*s)->records().size(); ++i) EXPECT_EQ((*s)->records()[i].order, static_cast<int64_t>(i));
  EXPECT_EQ(load_values(**s, "sub/deeper/c.npy"), std::vector<double>{3});
  EXPECT_EQ(load_values(**s, "sub/z.npz:x"), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(load_values(**s, "w.safetensors:k:1"), std::vector<double>{4});
  EXPECT_EQ(find_record(**s, "a.npy")->file, (d / "a.npy").string());
  EXPECT_TRUE(contains((*s)->describe(), d.path().string()));
  // Forcing a single-file format on a directory keeps only that format's files.
  auto only = parity::open_source(d.path(), "npz");
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(names(**only), (std::vector<std::string>{"sub/z.npz:x", "sub/z.npz:y"}));
}

TEST(Directory, ThousandGoodFilesAndOneBad) {
  TempDir d;
  for (int i = 0; i < 1000; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "t%04d.npy", i);
    write_file(d / name, f32_npy(static_cast<float>(i), 4));
  }
  // The bad one claims more data than it holds.
  write_file(d / "t0500_bad.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1024,), }", "abcd"));
  auto s = parity::open_source(d.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ((*s)->records().size(), 1000u);
  ASSERT_EQ((*s)->problems().size(), 1u);
  EXPECT_EQ((*s)->problems()[0].message(),
            (d / "t0500_bad.npy").string() + ": header claims 4096 bytes of data ([1024] f32), file has 4");
  EXPECT_EQ((*s)->records()[500].name, "t0500.npy");
  EXPECT_EQ((*s)->records()[501].name, "t0501.npy");
  // Every good file still loads, with its own value.
  for (int i = 0; i < 1000; i += 111) {
    char name[32];
    std::snprintf(name, sizeof name, "t%04d.npy", i);
    EXPECT_EQ(load_values(**s, name), std::vector<double>(4, i));
  }
}

TEST(Directory, UnreadableEntriesAreProblems) {
  TempDir d;
  write_file(d / "good.npy", f32_npy(1));
  fs::create_symlink(d / "missing.npy", d / "broken.npy");           // dangling: named like ours
  fs::create_symlink(d / "missing.txt", d / "broken.txt");           // dangling, not ours: skipped
  fs::create_directories(d / "looks_like.npy");                      // a directory: walked, not opened
  write_file(d / "looks_like.npy/inner.npy", f32_npy(5));
  fs::create_directory_symlink(d.path(), d / "loop");                // a cycle: not followed
  write_file(d / "empty.npz", "");
  auto s = parity::open_source(d.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(names(**s), (std::vector<std::string>{"good.npy", "looks_like.npy/inner.npy"}));
  ASSERT_EQ((*s)->problems().size(), 2u);
  EXPECT_TRUE(contains((*s)->problems()[0].message(), (d / "broken.npy").string() + ": cannot open: No such file"))
      << (*s)->problems()[0].message();
  EXPECT_TRUE(contains((*s)->problems()[1].message(), (d / "empty.npz").string() + ": corrupt zip archive: file too short"))
      << (*s)->problems()[1].message();
}

TEST(Directory, EmptyDirectoryAndSourceMisuse) {
  TempDir d;
  auto s = parity::open_source(d.path());
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE((*s)->records().empty());
  EXPECT_TRUE((*s)->problems().empty());
  // A record that does not belong to the source is refused, not dereferenced.
  write_file(d / "x.npy", f32_npy(1));
  auto s2 = parity::open_source(d.path());
  parity::Record fake = (*s2)->records()[0];
  fake.handle = 12345;
  EXPECT_EQ((*s2)->load(fake).status().code(), parity::StatusCode::kNotFound);
  auto single = parity::open_source(d / "x.npy");
  fake = (*single)->records()[0];
  fake.handle = 7;
  EXPECT_EQ((*single)->load(fake).status().code(), parity::StatusCode::kNotFound);
}

TEST(Registry, ListsTheTensorFormats) {
  std::vector<std::string> got;
  for (const auto& f : parity::registered_formats()) got.push_back(f.name);
  for (const char* want : {"npy", "npz", "safetensors"}) {
    EXPECT_NE(std::find(got.begin(), got.end(), want), got.end()) << want;
  }
}

}  // namespace
