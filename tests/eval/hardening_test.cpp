// Hostile and broken inputs to the eval readers (issue 14): each test reproduces one finding.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "formats/test_util.h"
#include "parity/eval.h"

namespace fs = std::filesystem;
using namespace parity;
using parity_test::nested;
using parity_test::TempDir;
using parity_test::write_file;
using namespace parity::eval;

namespace {

}  // namespace

// An mc `id` nesting 200k deep overflowed the stack (id.dump()); the line is now skipped with a
// problem naming file and line, the other questions are read.
TEST(EvalHardening, DeeplyNestedMcIdIsSkippedWithAProblem) {
  TempDir tmp;
  const fs::path d = tmp.path();
  write_file(d / "mc.jsonl", "{\"id\": \"a\", \"loglik\": [-1, -2], \"answer\": 0}\n{\"id\": " + nested(200000) +
                            ", \"loglik\": [-1, -2], \"answer\": 0}\n{\"id\": \"c\", \"loglik\": [-3, -2], \"answer\": 1}\n");
  std::vector<Status> problems;
  auto qs = read_mc(d / "mc.jsonl", &problems);
  ASSERT_TRUE(qs.ok()) << qs.status().ToString();
  ASSERT_EQ(qs->size(), 2u);
  EXPECT_EQ((*qs)[0].id, "a");
  EXPECT_EQ((*qs)[1].id, "c");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message().find("mc.jsonl:2"), std::string::npos) << problems[0].message();
  EXPECT_NE(problems[0].message().find("deeper than 512"), std::string::npos) << problems[0].message();
}

// An lm-eval sample whose doc_id nests 200k deep: skipped with a problem, the comparison goes on.
TEST(EvalHardening, DeeplyNestedLmEvalDocIdIsSkippedWithAProblem) {
  TempDir tmp;
  const fs::path d = tmp.path();
  const std::string results = R"({"results": {"t": {"acc,none": 0.5}}, "n-samples": {"t": {"effective": 2}}})";
  write_file(d / "a.json", results);
  write_file(d / "b.json", results);
  const std::string good = "{\"doc_id\": 0, \"filter\": \"none\", \"acc\": 1.0}\n";
  write_file(d / "samples_t_a.jsonl", good + "{\"doc_id\": " + nested(200000) + ", \"acc\": 0.0}\n");
  write_file(d / "samples_t_b.jsonl", good);
  auto r = compare_lm_eval(d / "a.json", d / "b.json", {d / "samples_t_a.jsonl"}, {d / "samples_t_b.jsonl"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  bool named = false;
  for (const Status& p : r->problems)
    named |= p.message().find("samples_t_a.jsonl:2") != std::string::npos &&
             p.message().find("deeper than 512") != std::string::npos;
  EXPECT_TRUE(named);
}

// A FIFO given as an mc file, an lm-eval results file or a logits file blocked the read forever in
// open(). Each is now refused from its stat(), naming it.
TEST(EvalHardening, FifoInputsAreRefusedNotOpened) {
  TempDir tmp;
  const fs::path d = tmp.path();
  for (const char* n : {"mc.jsonl", "results.json", "run.logits"})
    ASSERT_EQ(::mkfifo((d / n).c_str(), 0600), 0) << n;
  write_file(d / "b.json", R"({"results": {"t": {"acc,none": 0.5}}})");
  auto refused = [&](const Status& st, const char* n) {
    EXPECT_NE(st.message().find((d / n).string() + ": not a regular file (a FIFO)"), std::string::npos)
        << st.message();
  };
  Status st = Status::OK();
  EXPECT_TRUE(parity_test::returns_within(10, d / "mc.jsonl", [&] { st = read_mc(d / "mc.jsonl").status(); }));
  refused(st, "mc.jsonl");
  EXPECT_TRUE(parity_test::returns_within(
      10, d / "results.json", [&] { st = compare_lm_eval(d / "results.json", d / "b.json", {}, {}).status(); }));
  refused(st, "results.json");
  EXPECT_TRUE(parity_test::returns_within(10, d / "run.logits", [&] { st = open_logits_file(d / "run.logits").status(); }));
  refused(st, "run.logits");
}

// A non-string "subject" threw nlohmann's type_error out of read_mc (exit 3, found by fuzz/mc.cpp); a
// string lm-eval "target" of 1e300 was cast to int (undefined). The subject is now kept as its JSON
// text and the out-of-range target leaves the question without an answer (skipped with a problem).
TEST(EvalHardening, NonStringSubjectAndHugeTargetAreReadNotFatal) {
  TempDir tmp;
  const fs::path d = tmp.path();
  write_file(d / "mc.jsonl",
             "{\"id\": \"a\", \"subject\": 3, \"loglik\": [-1, -2], \"answer\": 0}\n"
             "{\"doc_id\": 1, \"filtered_resps\": [[\"-1.0\", \"False\"], [\"-2.0\", \"False\"]], \"target\": \"1e300\"}\n"
             "{\"doc_id\": 2, \"filtered_resps\": [[\"-1.0\", \"False\"], [\"-2.0\", \"False\"]], \"target\": \"1\"}\n");
  std::vector<Status> problems;
  auto qs = read_mc(d / "mc.jsonl", &problems);
  ASSERT_TRUE(qs.ok()) << qs.status().ToString();
  ASSERT_EQ(qs->size(), 2u);
  EXPECT_EQ((*qs)[0].subject, "3");
  EXPECT_EQ((*qs)[1].id, "2");
  EXPECT_EQ((*qs)[1].answer, 1);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message().find("mc.jsonl:2"), std::string::npos) << problems[0].message();
}

// An "n-samples" count of 1e29 (or 2.5, or -3) was converted to int64 with get<int64_t>(): undefined
// behaviour, read as INT64_MIN on x86 (issue 33 §8). A count that is not a non-negative integer is
// unknown (-1); an integral double within 2^53 is read.
TEST(EvalHardening, OutOfRangeSampleCountsAreUnknownNotUndefined) {
  TempDir tmp;
  const fs::path d = tmp.path();
  write_file(d / "a.json", R"({"results": {"t": {"acc,none": 0.5, "acc_stderr,none": 0.05},
                                              "u": {"acc,none": 0.5, "acc_stderr,none": 0.05},
                                              "v": {"acc,none": 0.5, "acc_stderr,none": 0.05}},
                               "n-samples": {"t": {"effective": 1e29, "original": 100}, "u": -3, "v": 100.0}})");
  write_file(d / "b.json", R"({"results": {"t": {"acc,none": 0.6, "acc_stderr,none": 0.05},
                                              "u": {"acc,none": 0.5, "acc_stderr,none": 0.05},
                                              "v": {"acc,none": 0.5, "acc_stderr,none": 0.05}},
                               "n-samples": {"t": {"effective": 2.5}, "u": 18446744073709551615, "v": 7}})");
  auto r = compare_lm_eval(d / "a.json", d / "b.json", {}, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::map<std::string, std::pair<int64_t, int64_t>> n;
  for (const auto& m : r->metrics) n[m.task] = {m.n_a, m.n_b};
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n["t"], std::make_pair(int64_t{-1}, int64_t{-1}));
  EXPECT_EQ(n["u"], std::make_pair(int64_t{-1}, int64_t{-1}));
  EXPECT_EQ(n["v"], std::make_pair(int64_t{100}, int64_t{7}));
}
