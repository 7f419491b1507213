// src/cli/python_engine.h — running parity's Python engines (`python -m parity.<engine>`) from the CLI.
//
// Replay and scan run torch, so they run in a Python with torch. The interpreter, first found wins:
//   1. $PARITY_PYTHON;
//   2. the venv `make build` creates: <binary dir>/../.venv/bin/python, then <source dir>/.venv/bin/python;
//   3. python3 on PATH.
// The engine's package and the compiled extension are put in front of PYTHONPATH when they exist next
// to the binary (<binary dir>/python) and in the source tree (<source dir>/python).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "parity/status.h"

namespace parity::cli {

// The interpreter and how it was chosen ("PARITY_PYTHON", "venv ...", "PATH").
struct PythonEngine {
  std::string python;
  std::string how;
};
PythonEngine find_python();

// Runs `python -m <module> args...` with stdin/stdout/stderr inherited; returns its exit status, or an
// error naming the interpreter when it cannot be started (127 from the child = not found).
Result<int> run_python_module(const std::string& module, const std::vector<std::string>& args);

// A fresh temporary file path (the file is created, empty) under $TMPDIR.
Result<std::string> temp_file(const std::string& stem);

// An engine run whose result is the JSON document it wrote to `--json FILE`.
struct EngineOutput {
  int exit_code = 0;
  nlohmann::json doc;  // discarded (is_discarded()) when the engine wrote no JSON object
};
// Runs `python -m <module> args... --json <temporary file>` and reads the document back; the file is
// removed. An error only when the interpreter cannot be started (or no temporary file can be made).
Result<EngineOutput> run_python_engine_json(const std::string& module, std::vector<std::string> args);

}  // namespace parity::cli
