// src/cli/replay_runner.h — the ReplayRunner of `parity compare --replay` (parity/compare_runs.h): the
// pipeline decides which suspects to replay and folds the verdicts in; this runs the Python engine
// `python -m parity.replay confirm GOLDEN TARGET` (python_engine.h says which interpreter) for them.
#pragma once

#include <string>
#include <vector>

#include "parity/compare_runs.h"

namespace parity::cli {

class EngineReplayRunner : public ReplayRunner {
 public:
  EngineReplayRunner(std::string golden, std::string target) : golden_(std::move(golden)), target_(std::move(target)) {}
  Result<std::vector<ReplayVerdict>> confirm(const std::vector<ReplayRequest>& suspects) override;

 private:
  std::string golden_, target_;
};

}  // namespace parity::cli
