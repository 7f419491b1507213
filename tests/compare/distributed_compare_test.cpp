// compare_runs under a group of processes, without MPI: the processes are played one after another in
// this test (distributed/played_group.h), so the partition, the row exchange and
// process 0's pipeline are checked wherever the tests run (mpirun or not). The same comparison by one
// process and by groups of 2, 3 and 5 must give the same parity.compare/1 document.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <map>
#include <string>
#include <vector>

#include "distributed/played_group.h"
#include "distributed/synthetic_run.h"
#include "formats/test_util.h"
#include "parity/compare_runs.h"
#include "parity/dump.h"
#include "parity/open_source.h"

namespace parity {
namespace {

using namespace parity_test;

std::string f32_npy(const std::vector<float>& v, const std::string& shape) {
  std::string data(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  return npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }", data);
}

// Two directories: equal, perturbed, transposed, shape-mismatched, one-sided and corrupt files, and
// one pair above the kernel's 1 MiB "big pair" size.
void write_inputs(const fs::path& g, const fs::path& t) {
  uint32_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<float>(seed >> 8) / 16777216.0f - 0.5f;
  };
  for (int i = 0; i < 17; ++i) {
    const int n = 64 * (i + 1);
    std::vector<float> a(static_cast<size_t>(n));
    for (float& x : a) x = next();
    std::vector<float> b = a;
    if (i % 3 == 1)
      for (float& x : b) x *= 1.0f + 0.01f * next();
    const std::string shape = "(" + std::to_string(n) + ",)";
    write_file(g / ("t" + std::to_string(100 + i) + ".npy"), f32_npy(a, shape));
    write_file(t / ("t" + std::to_string(100 + i) + ".npy"), f32_npy(b, shape));
  }
  std::vector<float> big(300000);
  for (float& x : big) x = next();
  write_file(g / "big.npy", f32_npy(big, "(300000,)"));
  for (float& x : big) x += 1e-3f;
  write_file(t / "big.npy", f32_npy(big, "(300000,)"));
  std::vector<float> w(6 * 4), wt(4 * 6);
  for (float& x : w) x = next();
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 4; ++c) wt[static_cast<size_t>(c * 6 + r)] = w[static_cast<size_t>(r * 4 + c)];
  write_file(g / "proj.npy", f32_npy(w, "(6, 4)"));
  write_file(t / "proj.npy", f32_npy(wt, "(4, 6)"));
  write_file(g / "logits.npy", f32_npy(std::vector<float>(32, 0.5f), "(4, 8)"));
  write_file(t / "logits.npy", f32_npy(std::vector<float>(32, 0.25f), "(4, 8)"));
  write_file(g / "reshaped.npy", f32_npy(std::vector<float>(6, 1.0f), "(6,)"));
  write_file(t / "reshaped.npy", f32_npy(std::vector<float>(5, 1.0f), "(5,)"));
  write_file(g / "nan.npy", f32_npy({1.0f, NAN, 3.0f}, "(3,)"));
  write_file(t / "nan.npy", f32_npy({1.0f, INFINITY, 3.0f}, "(3,)"));
  write_file(g / "only_golden.npy", f32_npy({1.0f}, "(1,)"));
  write_file(t / "corrupt.npy", std::string("\x93NUMPY\x01\x00not a header", 20));
}

std::string report_json(const RecordSource& g, const RecordSource& t, const ProcessGroup* group, bool& root_report) {
  CompareRunOptions o;
  o.compare.group = group;
  o.compare.jobs = 2;
  Result<CompareReport> r = compare_runs(g, t, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  root_report = is_output_process(group);
  if (!r.ok() || !root_report) return "";
  nlohmann::json j = compare_report_to_json(*r);
  j.erase("elapsed_seconds");
  // One peak memory per process of the group (the one field besides time that differs with its size).
  EXPECT_EQ(j["peak_resident_bytes"].size(), group ? static_cast<size_t>(group->size()) : 1u);
  for (const auto& b : j["peak_resident_bytes"]) EXPECT_GT(b.get<int64_t>(), 0);
  j.erase("peak_resident_bytes");
  return j.dump(1);
}

// write_inputs' two directories, opened (nullptr where one cannot be, which the test then reports).
std::pair<std::unique_ptr<RecordSource>, std::unique_ptr<RecordSource>> open_inputs(const TempDir& d) {
  write_inputs(d / "g", d / "t");
  Result<std::unique_ptr<RecordSource>> g = open_source((d / "g").string(), "");
  Result<std::unique_ptr<RecordSource>> t = open_source((d / "t").string(), "");
  EXPECT_TRUE(g.ok() && t.ok());
  if (!g.ok() || !t.ok()) return {};
  return {std::move(g).value(), std::move(t).value()};
}

TEST(DistributedCompare, EveryGroupSizeGivesTheOneProcessReport) {
  TempDir d;
  auto [g, t] = open_inputs(d);
  ASSERT_TRUE(g && t);
  bool root = false;
  const std::string alone = report_json(*g, *t, nullptr, root);
  ASSERT_NE(alone.find("\"fail\""), std::string::npos);
  ASSERT_NE(alone.find("transposed"), std::string::npos);
  for (int size : {2, 3, 5}) {
    Mailbox mailbox;
    for (int rank = size - 1; rank >= 1; --rank) {
      PlayedGroup group(rank, size, mailbox);
      EXPECT_EQ(report_json(*g, *t, &group, root), "");
      EXPECT_FALSE(root);
    }
    PlayedGroup zero(0, size, mailbox);
    EXPECT_EQ(report_json(*g, *t, &zero, root), alone) << "group of " << size;
    EXPECT_TRUE(root);
  }
}

TEST(DistributedCompare, SharesAreDisjointAndBalancedByBytes) {
  TempDir d;
  auto [g, t] = open_inputs(d);
  ASSERT_TRUE(g && t);
  Mailbox mailbox;
  std::map<std::string, int> measured_by;
  for (int rank = 2; rank >= 1; --rank) {
    PlayedGroup group(rank, 3, mailbox);
    CompareOptions o;
    o.group = &group;
    Result<CompareResult> r = run_compare(*g, *t, o);
    ASSERT_TRUE(r.ok());
    for (const CompareRow& row : r->rows)
      if (row.metrics) {
        EXPECT_TRUE(measured_by.emplace(row.golden->name, rank).second) << row.golden->name << " twice";
      }
  }
  // big.npy holds 96 % of the bytes: by bytes, its process measures it alone (by counts it would get a
  // third of the 22 rows); it sorts first, and its midpoint falls in the second third.
  ASSERT_EQ(measured_by.count("big.npy"), 1u);
  const int big_owner = measured_by["big.npy"];
  EXPECT_EQ(big_owner, 1);
  for (const auto& [name, rank] : measured_by)
    if (name != "big.npy") {
      EXPECT_NE(rank, big_owner) << name;
    }
  EXPECT_GT(measured_by.size(), 5u);  // process 2 took the small rows after it
}

// Two capture runs of `ranks` ranks (one folder each), 6 events a rank of 1,000 floats; the target's rank 1
// drifts from its third event on.
void write_runs(const fs::path& g, const fs::path& t, int ranks) {
  for (int side = 0; side < 2; ++side)
    write_synthetic_run(side == 0 ? g : t, ranks, 6, 1000, [side](int rank, int e, int i) {
      const float v = std::sin(0.01f * static_cast<float>(i + 37 * e + 101 * rank));
      return side == 1 && rank == 1 && e >= 2 ? v * 1.01f : v;
    });
}

DividedSources open_runs(const std::string& g, const std::string& t, const ProcessGroup* group) {
  return open_divided_sources({{g, ""}, {t, ""}}, group);
}

// The report of process `group` (of one process when nullptr) as JSON text, "" for a process other than
// 0; its result in `result_out` when given (for another process: its own share's rows).
std::string shared_report_json(const DividedSources& s, const ProcessGroup* group, CompareResult* result_out) {
  CompareRunOptions o;
  o.compare.group = group;
  o.compare.rank_shares = s.shares ? &*s.shares : nullptr;
  o.compare.jobs = 2;
  Result<CompareReport> r = compare_runs(*s.sources[0], *s.sources[1], o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (r.ok() && result_out != nullptr) *result_out = r->result;
  if (!r.ok() || !is_output_process(group)) return "";
  nlohmann::json j = compare_report_to_json(*r);
  j.erase("elapsed_seconds");
  j.erase("peak_resident_bytes");
  return j.dump(1);
}

// Captures of a folder per rank are divided by rank: each process other than 0 opens, lists and measures
// only its ranks, and process 0's report is the one-process report.
TEST(DistributedCompare, ProcessesListOnlyTheirRanksOfACapture) {
  TempDir d;
  write_runs(d / "g", d / "t", 5);
  const std::string g = (d / "g").string(), t = (d / "t").string();
  DividedSources alone = open_runs(g, t, nullptr);
  ASSERT_TRUE(alone.status.ok()) << alone.status.ToString();
  EXPECT_FALSE(alone.shares.has_value());
  const std::string expected = shared_report_json(alone, nullptr, nullptr);
  ASSERT_NE(expected.find("\"fail\""), std::string::npos);
  for (int size : {2, 3, 4, 5}) {
    Mailbox mailbox;
    std::set<int> listed;
    for (int rank = size - 1; rank >= 0; --rank) {
      PlayedGroup group(rank, size, mailbox);
      DividedSources s = open_runs(g, t, &group);
      ASSERT_TRUE(s.status.ok() && s.shares.has_value());
      ASSERT_EQ(s.shares->ranks.size(), static_cast<size_t>(size));
      const std::vector<int>& own = s.shares->ranks[static_cast<size_t>(rank)];
      for (const auto& src : s.sources) {
        for (const Record& r : src->records()) {
          if (rank == 0) continue;  // process 0 lists everything
          EXPECT_TRUE(std::binary_search(own.begin(), own.end(), r.rank)) << "process " << rank << " listed rank " << r.rank;
        }
      }
      for (int r : own) EXPECT_TRUE(listed.insert(r).second) << "rank " << r << " in two shares";
      CompareResult root;
      const std::string got = shared_report_json(s, &group, &root);
      if (rank == 0) {
        EXPECT_EQ(got, expected) << "group of " << size;
        EXPECT_EQ(root.rows_measured_for_others, 0);
        EXPECT_EQ(root.peak_resident_bytes.size(), static_cast<size_t>(size));
      }
    }
    EXPECT_EQ(listed, (std::set<int>{0, 1, 2, 3, 4}));
  }
}

// More processes than ranks: dividing by rank would leave processes idle, so every process lists
// everything and measures a byte share of the rows (each measures some), and the report is the same.
TEST(DistributedCompare, MoreProcessesThanRanksSplitTheRowsByBytes) {
  TempDir d;
  write_runs(d / "g", d / "t", 2);
  const std::string g = (d / "g").string(), t = (d / "t").string();
  const std::string expected = shared_report_json(open_runs(g, t, nullptr), nullptr, nullptr);
  Mailbox mailbox;
  for (int rank = 3; rank >= 0; --rank) {
    PlayedGroup group(rank, 4, mailbox);
    DividedSources s = open_runs(g, t, &group);
    ASSERT_TRUE(s.status.ok());
    EXPECT_FALSE(s.shares.has_value());
    EXPECT_EQ(s.sources[0]->records().size(), s.sources[1]->records().size());
    CompareResult mine;
    const std::string got = shared_report_json(s, &group, &mine);
    if (rank == 0) {
      EXPECT_EQ(got, expected);
    } else {
      EXPECT_GT(std::count_if(mine.rows.begin(), mine.rows.end(), [](const CompareRow& r) { return r.metrics.has_value(); }), 0)
          << "process " << rank << " measured nothing";
    }
  }
}

// A process that sends none of its ranks' rows (here: it listed nothing) loses nothing: process 0 measures
// those rows itself, says how many, and the report is still the one-process report.
TEST(DistributedCompare, RowsNoProcessSentAreMeasuredByProcessZero) {
  TempDir d;
  write_runs(d / "g", d / "t", 3);
  const std::string g = (d / "g").string(), t = (d / "t").string();
  const std::string expected = shared_report_json(open_runs(g, t, nullptr), nullptr, nullptr);
  Mailbox mailbox;
  {
    PlayedGroup one(1, 2, mailbox);
    DividedSources s = open_runs(g, t, &one);
    ASSERT_TRUE(s.shares.has_value());
    ASSERT_FALSE(s.shares->ranks[1].empty());
    s.sources[0] = std::move(open_source_ranks(g, "", {})).value();  // lists none of its ranks
    s.sources[1] = std::move(open_source_ranks(t, "", {})).value();
    EXPECT_TRUE(s.sources[0]->records().empty());
    shared_report_json(s, &one, nullptr);
  }
  PlayedGroup zero(0, 2, mailbox);
  DividedSources s = open_runs(g, t, &zero);
  CompareResult root;
  EXPECT_EQ(shared_report_json(s, &zero, &root), expected);
  EXPECT_EQ(root.rows_measured_for_others, 6 * static_cast<int64_t>(s.shares->ranks[1].size()));
}

}  // namespace
}  // namespace parity
