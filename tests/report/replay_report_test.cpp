// parity/replay_report.h: the verdict of a replay result and the line `parity replay` ends with.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "parity/replay_report.h"

namespace parity::report {
namespace {

std::string verdict_line(const nlohmann::json& doc) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  print_replay_verdict(f, doc, replay_outcome(doc["summary"]));
  std::fclose(f);
  std::string out(buf, size);
  std::free(buf);
  return out;
}

TEST(ReplayReport, TheVerdictLineSaysTheOutcomeAndTheCounts) {
  const nlohmann::json clean = {{"summary", {{"selected", 3}, {"replayed", 3}, {"bit_exact", 3}, {"creates_error", 0}}},
                                {"elapsed_seconds", 1.25}};
  EXPECT_EQ(replay_outcome(clean["summary"]).verdict, Verdict::kPass);
  EXPECT_EQ(verdict_line(clean), "replay: REPRODUCED | 3 of 3 replayed, 3 bit-exact, 0 create error | 1.25 s\n");

  const nlohmann::json creates = {{"summary", {{"selected", 3}, {"replayed", 3}, {"bit_exact", 2}, {"creates_error", 1}}}};
  EXPECT_EQ(replay_outcome(creates["summary"]).verdict, Verdict::kFail);
  EXPECT_EQ(verdict_line(creates), "replay: DIFFERENCES | 3 of 3 replayed, 2 bit-exact, 1 create error | 0.00 s\n");

  const nlohmann::json nothing = {{"summary", {{"selected", 0}}}};
  EXPECT_TRUE(replay_outcome(nothing["summary"]).nothing);
  EXPECT_EQ(verdict_line(nothing), "replay: NOTHING TO REPLAY | 0 of 0 replayed, 0 bit-exact, 0 create error | 0.00 s\n");
}

}  // namespace
}  // namespace parity::report
