// parity info RUN — what a capture run holds: parts (ranks), steps, events by kind, bytes, scalars,
// the environment fingerprint, and whether each part is complete or where its torn tail begins.
// Parse, call, print: read_run_info reads the run (under mpirun each process reads its share of the ranks),
// run_info_json / run_info_text (src/sources/run_info_output.cpp) render it (schema parity.info/1,
// docs/dump-format.md). Exit 0 = every part complete and readable, 1 = a part is torn or unclosed or a
// record is unreadable (everything before it is still listed), 2 = not a run.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "parity/terminal_text.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/ui.h"
#include "parity/run_info.h"
#include "parity/schemas.h"

namespace parity::cli {

CommandAction setup_info(CLI::App& sub, const GlobalOptions& global) {
  struct Opts {
    std::string run;
    std::string json_path;
    bool full_fingerprint = false;
  };
  auto o = std::make_shared<Opts>();
  sub.add_option("run", o->run, "Capture run directory (or one of its rank<R>/ parts)")->required();
  sub.add_option("--json", o->json_path, std::string("Write the summary as JSON (schema ") + schemas::kInfo.id + ", " + schemas::kInfo.doc + "); '-' = stdout");
  sub.add_flag("--fingerprint", o->full_fingerprint, "Print every fingerprint in full (JSON)");

  return [o, &global]() -> int {
    Result<RunInfo> r = read_run_info(o->run, global.group);
    if (!is_output_process(global.group)) return r.ok() ? kExitOk : kExitUsage;  // process 0 speaks
    if (!r.ok()) {
      std::fprintf(stderr, "parity info: %s\n", terminal_text(r.status().message()).c_str());
      return kExitUsage;
    }
    const bool complete = run_complete(*r);
    const std::string text = run_info_text(*r, o->run, {o->full_fingerprint, use_color(global)});
    if (o->json_path == "-") {
      std::cout << run_info_json(*r, o->run) << "\n";
      std::fputs(text.c_str(), stderr);
      return complete ? kExitOk : kExitDifferences;
    }
    if (!o->json_path.empty()) {
      Status st = write_output(o->json_path, run_info_json(*r, o->run) + "\n");
      if (!st.ok()) {
        std::fprintf(stderr, "parity info: %s\n", terminal_text(st.message()).c_str());
        return kExitUsage;
      }
    }
    if (!global.quiet || !complete) std::fputs(text.c_str(), stdout);
    return complete ? kExitOk : kExitDifferences;
  };
}

}  // namespace parity::cli
