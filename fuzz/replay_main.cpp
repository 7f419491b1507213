// fuzz/replay_main.cpp — a standalone driver for a harness's LLVMFuzzerTestOneInput: replays every file
// given (or found under a given folder) once, in sorted order, without libFuzzer. This is how the
// ordinary (gcc) build runs the checked-in corpora and past crash inputs as ctest entries
// (fuzz/CMakeLists.txt); a crash, an uncaught exception or a sanitizer report fails the test.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::filesystem::path> inputs_under(const std::filesystem::path& arg) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(arg)) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
      if (e.is_regular_file()) files.push_back(e.path());
  } else if (std::filesystem::is_regular_file(arg)) {
    files.push_back(arg);
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR...  (replays each input through the harness once)\n", argv[0]);
    return 2;
  }
  size_t replayed = 0;
  double slowest = 0;
  std::string slowest_name;
  for (int i = 1; i < argc; ++i) {
    for (const auto& file : inputs_under(argv[i])) {
      std::ifstream in(file, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      auto t0 = std::chrono::steady_clock::now();
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > slowest) { slowest = s; slowest_name = file.string(); }
      ++replayed;
    }
  }
  // A replay of nothing proves nothing: a missing corpus folder fails the test.
  if (replayed == 0) {
    std::fprintf(stderr, "no input found under the given paths\n");
    return 1;
  }
  std::printf("replayed %zu inputs; slowest %.3f s (%s)\n", replayed, slowest, slowest_name.c_str());
  return 0;
}
