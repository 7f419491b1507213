// Helpers for tests/formats: a scratch directory (temp_dir.h), byte-level file writers (.npy, .safetensors) and a
// way to run numpy (the venv's python, PARITY_TEST_PYTHON) to write reference files.
#pragma once

#include <gtest/gtest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "parity/source.h"
#include "parity/tensor.h"
#include "temp_dir.h"

namespace parity_test {

namespace fs = std::filesystem;

// Runs `fn` on a thread and says whether it returned within `seconds`. If not (a reader stuck opening
// the FIFO `fifo`), opens the FIFO's write end to release it, so that a failing test still ends.
template <typename Fn>
bool returns_within(double seconds, const fs::path& fifo, Fn fn) {
  std::promise<void> done;
  std::future<void> f = done.get_future();
  std::thread t([&] {
    fn();
    done.set_value();
  });
  const bool in_time = f.wait_for(std::chrono::duration<double>(seconds)) == std::future_status::ready;
  while (f.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) ::close(w);
  }
  t.join();
  return in_time;
}

inline void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string le_bytes(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}

// A .npy file with the given header dict text (padded as numpy does: total prefix+header a multiple of
// 64, ending in '\n') and raw data bytes.
inline std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string h = dict;
  while ((prefix + h.size() + 1) % 64 != 0) h.push_back(' ');
  h.push_back('\n');
  std::string s = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  s += le_bytes(h.size(), major == 1 ? 2 : 4);
  return s + h + data;
}

// Runs a Python snippet with numpy (the project's venv, PARITY_TEST_PYTHON) in `cwd`; returns its exit status.
inline int run_python(const fs::path& cwd, const std::string& code) {
  const fs::path script = cwd / "_gen.py";
  write_file(script, "import numpy as np\n" + code + "\n");
  const std::string cmd = "cd '" + cwd.string() + "' && '" PARITY_TEST_PYTHON "' '" + script.string() + "'";
  const int rc = std::system(cmd.c_str());
  fs::remove(script);
  return rc;
}

inline std::vector<double> values_of(const parity::TensorView& v) {
  std::vector<double> out(static_cast<size_t>(v.numel));
  parity::decode_to_double(v, 0, v.numel, out.data());
  return out;
}

inline const parity::Record* find_record(const parity::RecordSource& s, const std::string& name) {
  for (const parity::Record& r : s.records()) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

// Loads a record by name, failing the test when it is missing or unloadable.
inline std::vector<double> load_values(const parity::RecordSource& s, const std::string& name) {
  const parity::Record* r = find_record(s, name);
  EXPECT_NE(r, nullptr) << "no record " << name;
  if (!r) return {};
  auto v = s.load(*r);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  if (!v.ok()) return {};
  return values_of(*v);
}

// JSON nested `depth` deep ("[[[…]]]"): the input that overflowed recursive parsers (issue 14).
inline std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

inline bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

}  // namespace parity_test
