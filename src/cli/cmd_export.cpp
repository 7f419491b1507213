// parity export RUN --format npy|safetensors -o DIR — a capture run's tensors as files other tools read.
// Parses options, calls dump::export_run (src/dump/export.cpp), prints what was written. Never
// overwrites: an existing target file stops the export before anything is written.
#include <cstdio>
#include <memory>
#include <string>

#include "parity/terminal_text.h"
#include "cli/command.h"
#include "parity/dump.h"

namespace parity::cli {

CommandAction setup_export(CLI::App& sub, const GlobalOptions& global) {
  struct Opts {
    std::string run, format = "npy", out;
  };
  auto o = std::make_shared<Opts>();
  sub.add_option("run", o->run, "Capture run directory (tensor-mode records are exported)")->required();
  sub.add_option("--format", o->format, "npy (one file per tensor + index.json) or safetensors (one file per rank and step)")
      ->check(CLI::IsMember({"npy", "safetensors"}))
      ->capture_default_str();
  sub.add_option("-o,--output", o->out, "Output directory (existing files are never overwritten)")->required();

  return [o, &global]() -> int {
    auto r = dump::RunReader::open(o->run);
    if (!r.ok()) {
      std::fprintf(stderr, "parity export: %s\n", terminal_text(r.status().message()).c_str());
      return kExitUsage;
    }
    auto s = dump::export_run(**r, o->format, o->out);
    if (!s.ok()) {
      std::fprintf(stderr, "parity export: %s\n", terminal_text(s.status().message()).c_str());
      return kExitUsage;
    }
    for (const Status& p : (*r)->problems()) std::fprintf(stderr, "parity export: warning: %s\n", terminal_text(p.message()).c_str());
    for (const Status& p : s->problems) std::fprintf(stderr, "parity export: %s\n", terminal_text(p.message()).c_str());
    if (!global.quiet)
      std::printf("exported %llu tensors (%llu bytes) as %s into %s (%zu files)\n",
                  static_cast<unsigned long long>(s->tensors), static_cast<unsigned long long>(s->bytes),
                  o->format.c_str(), o->out.c_str(), s->files.size());
    return s->problems.empty() ? kExitOk : kExitDifferences;
  };
}

}  // namespace parity::cli
