// A C++ user of the installed parity (tests/install/cpp_package_test.sh builds it against a
// `cmake --install` prefix, once with find_package(parity CONFIG) and once with pkg-config):
// open two runs (tensor files, directories, capture dumps), compare them through the library's one
// pipeline, print the verdict and exit with the pipeline's exit code, as `parity compare` does.
#include <cstdio>

#include "parity/compare_runs.h"
#include "parity/open_source.h"

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: %s GOLDEN TARGET\n", argv[0]), 2;
  auto golden = parity::open_source(argv[1]);
  auto target = parity::open_source(argv[2]);
  for (const auto* side : {&golden, &target})
    if (!side->ok()) return std::fprintf(stderr, "%s\n", side->status().message().c_str()), 2;
  auto report = parity::compare_runs(*golden.value(), *target.value(), parity::CompareRunOptions{});
  if (!report.ok()) return std::fprintf(stderr, "%s\n", report.status().message().c_str()), 2;
  const parity::CompareSummary& s = report.value().result.summary;
  std::printf("verdict %s rows %lld fail %lld\n", parity::verdict_name(s.verdict), (long long)s.rows, (long long)s.fail);
  return report.value().exit_code;
}
