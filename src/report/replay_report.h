// report/replay_report.h — the terminal form of a `parity replay` result (schema parity.replay/1,
// docs/replay.md), rendered from the JSON the engine wrote.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>

namespace parity::report {

// Summary line, the events that create error, are not reproduced bit for bit or could not be replayed
// (up to `limit`, <= 0 = all; with `all` every replayed event too), and the reasons counted.
void print_replay(std::FILE* out, const nlohmann::json& doc, long limit, bool all, bool color);

}  // namespace parity::report
