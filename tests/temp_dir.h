// A test's scratch folders under /tmp, removed with everything in them when their owner ends, so that
// `make test` leaves nothing behind (each test process has its own, so parallel ctest runs never share).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace parity_test {

// A fresh directory under /tmp, removed with everything in it at the end of its scope (one test).
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/parity_test_XXXXXX";
    const char* p = mkdtemp(tmpl);
    EXPECT_NE(p, nullptr);
    path_ = p ? p : "/tmp";
  }
  ~TempDir() {
    std::error_code ec;
    if (path_ != "/tmp") std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& s) const { return path_ / s; }

 private:
  std::filesystem::path path_;
};

// The scratch directory of this test process, removed when the process exits: for helpers that hand
// out paths by name across the tests of one binary.
inline const std::filesystem::path& process_temp_dir() {
  static const TempDir dir;
  return dir.path();
}

// A fresh, empty directory `name` in the process's scratch directory.
inline std::filesystem::path fresh_temp_dir(const std::string& name) {
  const std::filesystem::path d = process_temp_dir() / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace parity_test
