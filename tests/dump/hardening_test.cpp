// Hostile and broken inputs to the dump reader (issue 14): each test reproduces one finding.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "formats/test_util.h"
#include "parity/dump.h"

namespace fs = std::filesystem;
using namespace parity;
using parity_test::nested;

namespace {

fs::path fresh_run(const std::string& name) {
  fs::path d = parity_test::process_temp_dir() / name;
  fs::remove_all(d);
  return d;
}

void append_frame(const fs::path& file, const std::string& payload) {
  std::ofstream out(file, std::ios::binary | std::ios::app);
  out << dump::encode_frame(payload);
}

bool any_problem_has(const dump::RunReader& r, const std::string& a, const std::string& b) {
  for (const Status& p : r.problems())
    if (p.message().find(a) != std::string::npos && p.message().find(b) != std::string::npos) return true;
  return false;
}

// A small valid run (one event, one scalars record, one fingerprint) whose part folder is returned.
fs::path write_small_run(const fs::path& run) {
  auto w = dump::DumpWriter::create(run, {});
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE((*w)->write_fingerprint(R"({"python":"3.11"})").ok());
  dump::EventMeta m;
  m.name = "x";
  m.module = "m";
  m.op = "Linear";
  m.direction = "forward";
  m.role = "output";
  m.step = 0;
  m.order = 0;
  m.dtype = DType::kF32;
  m.shape = {1};
  m.device = "cpu";
  auto b = dump::Buffer::allocate(4);
  std::memset(b.bytes.get(), 0, 4);
  EXPECT_TRUE((*w)->append_event(m, std::move(b)).ok());
  EXPECT_TRUE((*w)->append_scalars(0, R"({"loss":2.5})").ok());
  EXPECT_TRUE((*w)->close().ok());
  return (*w)->part_dir();
}

// The payload of the first record of `kind` ("event", "header") in a part's manifest.
std::string record_of_kind(const fs::path& part, const std::string& kind) {
  auto scan = dump::scan_frames(part / "manifest.pfr");
  EXPECT_TRUE(scan.ok()) << scan.status().ToString();
  if (!scan.ok()) return "";
  for (const auto& p : scan->payloads)
    if (p.find("\"" + kind + "\"") != std::string::npos) return p;
  return "";
}

}  // namespace

// JSON nested 200k deep in a manifest `args`, a scalars record and an environment record overflowed
// the stack (nlohmann's dump/copy recurse per level). Each is now skipped with a problem naming the
// file and record; the rest of the run is read.
TEST(DumpHardening, DeeplyNestedJsonInEveryLogIsAProblemNotACrash) {
  const fs::path run = fresh_run("deep");
  const fs::path part = write_small_run(run);
  const std::string event = record_of_kind(part, "event");
  ASSERT_FALSE(event.empty());
  nlohmann::json ev = nlohmann::json::parse(event);
  ev["name"] = "deep";
  ev["args"] = "@@";
  std::string deep_event = ev.dump();
  deep_event.replace(deep_event.find("\"@@\""), 4, nested(200000));
  append_frame(part / "manifest.pfr", deep_event);
  append_frame(part / "scalars.pfr", R"({"kind":"scalars","rank":0,"step":1,"values":{"loss":)" + nested(200000) + "}}");
  append_frame(part / "environment.pfr", R"({"kind":"fingerprint","rank":0,"fingerprint":)" + nested(200000) + "}");

  auto r = dump::RunReader::open(run);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ((*r)->records().size(), 1u);
  EXPECT_EQ((*r)->records()[0].name, "x");
  for (const Record& rec : (*r)->records()) EXPECT_LT((*r)->args_json(rec).size(), 1000u);
  ASSERT_EQ((*r)->scalars().size(), 1u);
  EXPECT_EQ((*r)->scalars()[0].step, 0);
  ASSERT_EQ((*r)->fingerprints().size(), 1u);
  EXPECT_NE((*r)->fingerprints().begin()->second.find("3.11"), std::string::npos);
  EXPECT_TRUE(any_problem_has(**r, "manifest.pfr", "deeper than 512"));
  EXPECT_TRUE(any_problem_has(**r, "scalars.pfr", "deeper than 512"));
  EXPECT_TRUE(any_problem_has(**r, "environment.pfr", "deeper than 512"));
}

// A FIFO at rank0/scalars.pfr blocked the reader forever in open(). It is now a problem naming it,
// never opened, and the run's records are read.
TEST(DumpHardening, FifoInAPartIsAProblemNotAHang) {
  const fs::path run = fresh_run("fifo");
  const fs::path part = write_small_run(run);
  fs::remove(part / "scalars.pfr");
  ASSERT_EQ(::mkfifo((part / "scalars.pfr").c_str(), 0600), 0);
  Result<std::unique_ptr<dump::RunReader>> r = Status::Invalid("not run");
  ASSERT_TRUE(parity_test::returns_within(10, part / "scalars.pfr", [&] { r = dump::RunReader::open(run); }))
      << "blocked on the FIFO";
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->records().size(), 1u);
  EXPECT_TRUE(any_problem_has(**r, "scalars.pfr", "not a regular file (a FIFO)"));
}

// Event records that break the identity docs/dump-format.md gives them — step 1e300, a negative step, a
// rank other than the folder's, an event before the header, a name twice within one (rank, step) — were
// read silently (issue 33 §8). Each is read, under one problem per kind naming the manifest and a record.
TEST(DumpHardening, EventsThatBreakTheirIdentityAreReadWithAProblem) {
  const fs::path run = fresh_run("identity");
  const fs::path part = write_small_run(run);
  nlohmann::json event = nlohmann::json::parse(record_of_kind(part, "event"), nullptr, false);
  ASSERT_TRUE(event.is_object());
  event.erase("data");
  event["stats"] = {{"min", 0.0}, {"max", 0.0}, {"numel", 1}};
  auto with = [&](const std::string& name, const nlohmann::json& step, const nlohmann::json& rank) {
    nlohmann::json e = event;
    e["name"] = name;
    e["step"] = step;
    e["rank"] = rank;
    return e.dump();
  };
  std::string huge = with("huge_step", 0, 0);
  huge.replace(huge.find("\"step\":0"), 8, "\"step\":1e300");
  append_frame(part / "manifest.pfr", huge);
  append_frame(part / "manifest.pfr", with("negative_step", -4, 0));
  append_frame(part / "manifest.pfr", with("other_rank", 0, 3));
  append_frame(part / "manifest.pfr", with("x", 0, 0));  // the small run's event "x" again in step 0

  auto r = dump::RunReader::open(run);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->records().size(), 5u);  // nothing dropped
  for (const Record& rec : (*r)->records()) {
    EXPECT_EQ(rec.rank, 0) << rec.name.str();
    if (rec.name == "huge_step" || rec.name == "negative_step") EXPECT_EQ(rec.step, -1) << rec.name.str();
  }
  EXPECT_TRUE(any_problem_has(**r, "2 event record(s) have a step that is missing, negative", "huge_step"));
  EXPECT_TRUE(any_problem_has(**r, "lie in rank0/ but name another rank", "other_rank says rank 3"));
  EXPECT_TRUE(any_problem_has(**r, "1 event name(s) repeat within their (rank, step)", "\"x\", rank 0, step 0"));
  EXPECT_FALSE(any_problem_has(**r, "before the header", ""));

  // An event written ahead of the header: a second writer, or a header lost and rewritten.
  const fs::path early = fresh_run("identity_early");
  fs::create_directories(early / "rank0");
  append_frame(early / "rank0" / "manifest.pfr", with("first", 0, 0));
  append_frame(early / "rank0" / "manifest.pfr", record_of_kind(part, "header"));
  auto e = dump::RunReader::open(early);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->records().size(), 1u);
  EXPECT_TRUE(any_problem_has(**e, "record 0 is an event before the header record", "manifest.pfr"));
}
