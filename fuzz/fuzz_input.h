// fuzz/fuzz_input.h — what every harness shares: a scratch directory for the files a reader needs,
// splitting one fuzz input into several files, and touching every decoded tensor element.
//
// The readers take paths (they map files, stat them, refuse FIFOs), so a harness writes its input to a
// file and calls the real entry point on it, exactly as the CLI does. The scratch directory is on tmpfs
// (/dev/shm) when there is one, so a write costs microseconds, not a disk round trip (docs/fuzzing.md).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "parity/tensor.h"

namespace parity_fuzz {

// Sections of one input are separated by this line. A harness that needs several files (a run directory,
// two lm-eval results) splits on it; libFuzzer finds it through its memmem/memcmp hooks.
inline constexpr std::string_view kSeparator = "\n%%\n";

class Scratch {
 public:
  Scratch() {
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : nullptr;
    std::filesystem::path root = base ? std::filesystem::path(base) : std::filesystem::temp_directory_path();
    dir_ = root / ("parity-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

// The process-wide scratch directory (removed when the process exits normally).
inline const std::filesystem::path& scratch() {
  static Scratch s;
  return s.dir();
}

// A fresh, empty sub-folder of the scratch directory (whatever the previous input left is removed).
inline std::filesystem::path fresh_dir(const std::string& name) {
  std::filesystem::path d = scratch() / name;
  std::error_code ec;
  std::filesystem::remove_all(d, ec);
  std::filesystem::create_directories(d);
  return d;
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// At most `max_sections` pieces; the last one keeps any further separators.
inline std::vector<std::string_view> split_sections(std::string_view input, size_t max_sections) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < max_sections) {
    size_t at = input.find(kSeparator);
    if (at == std::string_view::npos) break;
    out.push_back(input.substr(0, at));
    input.remove_prefix(at + kSeparator.size());
  }
  out.push_back(input);
  return out;
}

// The file bytes of a checksummed format: an input starting with 'F' is cut into sections, each
// wrapped by `frame` (which writes valid lengths and checksums, so mutations reach the parser behind
// them); any other input is used as it is (so the framing itself is fuzzed too).
template <typename Frame>
std::string framed_if_flagged(std::string_view input, Frame frame) {
  if (input.empty() || input.front() != 'F') return std::string(input);
  input.remove_prefix(1);
  std::string bytes;
  for (std::string_view section : split_sections(input, 1 << 16)) bytes += frame(section);
  return bytes;
}

// Lines of a section (without the '\n'); an empty last line is dropped.
inline std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    size_t at = text.find('\n');
    if (at == std::string_view::npos) {
      out.push_back(text);
      break;
    }
    out.push_back(text.substr(0, at));
    text.remove_prefix(at + 1);
  }
  return out;
}

// Reads every element of a view (decoding handles byte order and strides), so a view that points past
// its mapping is caught by AddressSanitizer here rather than in a later command. Statistics are what
// `parity info` and compare compute first.
inline double touch(const parity::TensorView& t) {
  parity::TensorStats s = parity::compute_stats(t);
  double buf[256];
  double sum = s.l2norm;
  for (int64_t i = 0; i < t.numel; i += 256) {
    int64_t n = std::min<int64_t>(256, t.numel - i);
    parity::decode_to_double(t, i, n, buf);
    sum += buf[0];
  }
  return sum;
}

}  // namespace parity_fuzz
