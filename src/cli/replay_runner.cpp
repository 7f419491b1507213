// EngineReplayRunner: `python -m parity.replay confirm` for `parity compare --replay` (replay_runner.h).
#include "cli/replay_runner.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/python_engine.h"
#include "parity/schemas.h"

namespace parity::cli {

Result<std::vector<ReplayVerdict>> EngineReplayRunner::confirm(const std::vector<ReplayRequest>& suspects) {
  nlohmann::json req = nlohmann::json::array();
  for (const ReplayRequest& r : suspects) req.push_back({{"event", r.event}, {"step", r.step}, {"rank", r.rank}});
  PARITY_ASSIGN_OR_RETURN(std::string in, temp_file("suspects"));
  std::ofstream(in) << req.dump();
  Result<EngineOutput> engine =
      run_python_engine_json("parity.replay", {"confirm", golden_, target_, "--suspects-json", in});
  std::error_code ec;
  std::filesystem::remove(in, ec);
  if (!engine.ok()) return engine.status();
  if (engine->exit_code != 0)
    return Status::Internal("the replay engine (" + find_python().python + " -m parity.replay, chosen by " +
                            find_python().how + ") exited with status " + std::to_string(engine->exit_code) +
                            " (its message is above); set PARITY_PYTHON to a Python with torch and numpy");
  const nlohmann::json& doc = engine->doc;
  if (doc.is_discarded() || !doc.contains("suspects"))
    return Status::Internal(std::string("the replay engine wrote no ") + schemas::kReplay.id + " result");
  std::vector<ReplayVerdict> verdicts;
  for (const auto& s : doc["suspects"])
    verdicts.push_back({s.value("event", ""), s.value("step", int64_t{-1}), s.value("rank", -1), s.value("status", ""),
                        s.value("evidence", "")});
  return verdicts;
}

}  // namespace parity::cli
