// Hostile inputs to the tensor formats and directory sources (issue 14): each test reproduces one finding.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "formats/test_util.h"
#include "parity/open_source.h"

using namespace parity;
using namespace parity_test;

// A FIFO named b.npy in a compared folder blocked the reader forever in open(). It is now a problem
// naming it, never opened, and the folder's other tensors are read.
TEST(FormatsHardening, FifoNamedLikeATensorFileIsAProblemNotAHang) {
  TempDir d;
  write_file(d / "a.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0')));
  ASSERT_EQ(::mkfifo((d / "b.npy").c_str(), 0600), 0);
  Result<std::unique_ptr<RecordSource>> s = Status::Invalid("not run");
  ASSERT_TRUE(returns_within(10, d / "b.npy", [&] { s = open_source(d.path()); })) << "blocked on the FIFO";
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ((*s)->records().size(), 1u);
  EXPECT_EQ((*s)->records()[0].name, "a.npy");
  ASSERT_EQ((*s)->problems().size(), 1u);
  EXPECT_NE((*s)->problems()[0].message().find((d / "b.npy").string() + ": not a regular file (a FIFO)"),
            std::string::npos)
      << (*s)->problems()[0].message();
}
