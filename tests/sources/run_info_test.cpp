// read_run_info (parity/run_info.h): under a group each process reads its share of the ranks and process
// 0 ends with the summary one process reads alone; the summary's outputs (run_info_json, run_info_text).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "distributed/played_group.h"
#include "distributed/synthetic_run.h"
#include "parity/open_source.h"
#include "parity/run_info.h"
#include "parity/schemas.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace parity;
using parity_test::PlayedGroup;

namespace {

// Five ranks of three events; rank 3's manifest loses its last 7 bytes (a torn tail and a problem).
void write_run(const fs::path& dir) {
  parity_test::write_synthetic_run(dir, 5, 3, 4, [](int rank, int e, int i) { return float(rank + e + i); });
  const fs::path manifest = dir / "rank3" / "manifest.pfr";
  fs::resize_file(manifest, fs::file_size(manifest) - 7);
}

// Everything `parity info` prints of a summary, as one comparable text.
std::string text_of(const RunInfo& info) {
  std::string out;
  for (const dump::PartSummary& p : info.parts) {
    out += "rank " + std::to_string(p.rank) + " " + p.dir.string() + " events " + std::to_string(p.events) + " bytes " +
           std::to_string(p.manifest_valid_bytes) + "/" + std::to_string(p.manifest_bytes) + " tail '" + p.manifest_tail +
           "' closed " + std::to_string(p.closed) + " data " + std::to_string(p.data_bytes) + " steps " +
           std::to_string(p.steps.size()) + " kinds " + std::to_string(p.events_by_kind.size()) + "\n";
  }
  for (const auto& [rank, json] : info.fingerprints) out += "fingerprint " + std::to_string(rank) + " " + json + "\n";
  for (const Status& s : info.problems) out += "problem " + s.ToString() + "\n";
  return out;
}

}  // namespace

TEST(RunInfo, ProcessZeroGathersWhatEveryProcessReadOfItsShare) {
  parity_test::TempDir d;
  write_run(d / "alone");
  Result<RunInfo> alone = read_run_info(d / "alone");
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  ASSERT_EQ(alone->parts.size(), 5u);
  ASSERT_FALSE(alone->problems.empty());
  const std::string expected = text_of(*alone);
  for (int size : {2, 3, 4, 7}) {
    // Every run of this loop is read at the same path, so that the parts' folders print the same.
    const fs::path run = d / "run";
    fs::remove_all(run);
    write_run(run);
    const std::optional<RankShares> shares = plan_rank_shares({dump::run_rank_parts(run)}, size);
    ASSERT_TRUE(shares.has_value());
    parity_test::Mailbox mailbox;
    for (int rank = size - 1; rank >= 1; --rank) {
      PlayedGroup group(rank, size, mailbox);
      Result<RunInfo> got = read_run_info(run, &group);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(got->parts.empty() && got->problems.empty()) << "process " << rank << " returned a summary";
    }
    // Process 0 can only report the other processes' ranks from their messages: their manifests are now
    // garbage of the same size (the same directory listing, so the same shares).
    for (size_t p = 1; p < shares->ranks.size(); ++p)
      for (int rank : shares->ranks[p]) {
        const fs::path manifest = run / ("rank" + std::to_string(rank)) / "manifest.pfr";
        const std::string garbage(fs::file_size(manifest), 'x');
        std::ofstream(manifest, std::ios::binary | std::ios::trunc) << garbage;
      }
    PlayedGroup root(0, size, mailbox);
    Result<RunInfo> got = read_run_info(run, &root);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    std::string want = expected;
    for (size_t at; (at = want.find((d / "alone").string())) != std::string::npos;)
      want.replace(at, (d / "alone").string().size(), run.string());
    EXPECT_EQ(text_of(*got), want) << "group of " << size;
  }
}

// A process on a node that does not see the run (no shared file system there), or sees another run at
// the same path, fails the call on every process: process 0 never reports a run short of its ranks.
TEST(RunInfo, AProcessThatSeesAnotherRunFailsTheCall) {
  parity_test::TempDir d;
  const fs::path run = d / "run";
  for (const char* view : {"missing", "fewer ranks"}) {
    fs::remove_all(run);
    write_run(run);
    parity_test::Mailbox mailbox;
    fs::rename(run / "rank4", d / "rank4");
    if (std::string(view) == "missing") fs::rename(run, d / "away");
    PlayedGroup one(1, 2, mailbox);
    (void)read_run_info(run, &one);  // its answer is process 0's broadcast, which a played group does not relay
    if (std::string(view) == "missing") fs::rename(d / "away", run);
    fs::rename(d / "rank4", run / "rank4");
    PlayedGroup root(0, 2, mailbox);
    Result<RunInfo> got = read_run_info(run, &root);
    ASSERT_FALSE(got.ok()) << view;
    EXPECT_NE(got.status().message().find("process 1 of 2"), std::string::npos) << got.status().ToString();
    EXPECT_NE(got.status().message().find(std::string(view) == "missing" ? "no such run directory" : "same paths"),
              std::string::npos) << got.status().ToString();
  }
}

TEST(RunInfo, NotARunIsAnErrorNamingThePath) {
  parity_test::TempDir d;
  Result<RunInfo> got = read_run_info(d / "missing");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find((d / "missing").string()), std::string::npos);
}

// The outputs of `parity info` (run_info_json, run_info_text): a torn part makes the run incomplete, the
// JSON is parity.info/1 with each part's state, and the text says where the tail is torn.
TEST(RunInfoOutput, ATornPartIsIncompleteInTheJsonAndTheText) {
  parity_test::TempDir d;
  write_run(d / "run");
  Result<RunInfo> info = read_run_info(d / "run");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_FALSE(run_complete(*info));
  const nlohmann::json j = nlohmann::json::parse(run_info_json(*info, "runs/x"));
  EXPECT_EQ(j["schema"], schemas::kInfo.id);
  EXPECT_EQ(j["run"], "runs/x");
  EXPECT_EQ(j["complete"], false);
  ASSERT_EQ(j["parts"].size(), 5u);
  for (const auto& part : j["parts"]) EXPECT_EQ(part["complete"], part["rank"] != 3) << part.dump();
  EXPECT_TRUE(j["parts"][3]["torn_tail"].is_string());
  EXPECT_FALSE(j["problems"].empty());

  const std::string text = run_info_text(*info, "runs/x");
  EXPECT_EQ(text.rfind(std::string("run runs/x (") + schemas::kDump.id + ")\npart rank0: complete\n", 0), 0u) << text;
  EXPECT_NE(text.find("part rank3: TORN: "), std::string::npos) << text;
  EXPECT_NE(text.find("\nproblem: "), std::string::npos) << text;
  EXPECT_EQ(text.find('\033'), std::string::npos) << "colour only when asked";
  EXPECT_NE(run_info_text(*info, "runs/x", {.color = true}).find("\033[31mTORN"), std::string::npos);
}

TEST(RunInfoOutput, AnIntactRunIsComplete) {
  parity_test::TempDir d;
  parity_test::write_synthetic_run(d / "run", 2, 1, 4, [](int, int, int i) { return float(i); });
  Result<RunInfo> info = read_run_info(d / "run");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_TRUE(run_complete(*info));
  EXPECT_EQ(nlohmann::json::parse(run_info_json(*info, "r"))["complete"], true);
}
