// Exact pairing of op events whose module calls run different op sequences (release_diverging_op_sequences):
// an op that runs equally often on both sides keeps its exact pairs; only an op whose count differs is
// released to the alignment (issue 28 §6: a missing 1/√d division demoted the softmax to an aligned pair).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "parity/matching.h"

namespace parity::matching {
namespace {

// The input and output records of one op call "<call>/<op>#<k>/forward/{input,output}/0".
void op_call(RecordList& out, const std::string& call, const std::string& op, int k, int64_t& order) {
  for (const char* role : {"input", "output"}) {
    Record r;
    r.name = call + "/" + op + "#" + std::to_string(k) + "/forward/" + role + "/0";
    r.module = call;
    r.op = op;
    r.role = role;
    r.direction = "forward";
    r.step = 0;
    r.rank = 0;
    r.order = order++;
    out.push_back(r);
  }
}

// One module call running `ops` in order, each counted per op as capture names them.
RecordList call_of(const std::vector<std::string>& ops) {
  RecordList out;
  std::map<std::string, int> seen;
  int64_t order = 0;
  for (const std::string& op : ops) op_call(out, "blocks.1", op, seen[op]++, order);
  return out;
}

std::vector<std::string> names(const RecordList& recs, const std::vector<size_t>& idx) {
  std::vector<std::string> out;
  for (size_t i : idx) out.push_back(recs[i].name);
  return out;
}

bool paired(const ExactPairing& p, const RecordList& golden, const std::string& name) {
  return std::any_of(p.pairs.begin(), p.pairs.end(), [&](const auto& gt) { return golden[gt.first].name == name; });
}

TEST(ExactPairing, AMissingOpDoesNotReleaseItsSiblings) {
  const RecordList golden = call_of({"matmul", "div", "softmax", "matmul"});
  const RecordList target = call_of({"matmul", "softmax", "matmul"});  // no 1/√d
  ExactPairing p = pair_exact(golden, target, {});
  EXPECT_EQ(release_diverging_op_sequences(golden, target, p), 0);
  EXPECT_TRUE(paired(p, golden, "blocks.1/softmax#0/forward/output/0"));
  EXPECT_TRUE(paired(p, golden, "blocks.1/matmul#1/forward/input/0"));
  EXPECT_EQ(names(golden, p.unmatched_golden),
            (std::vector<std::string>{"blocks.1/div#0/forward/input/0", "blocks.1/div#0/forward/output/0"}));
  EXPECT_TRUE(p.unmatched_target.empty());
}

TEST(ExactPairing, AnOpThatRunsAnotherNumberOfTimesIsReleased) {
  // A linear chunked in two: "linear#0" is the whole product in the golden, the first half in the target.
  const RecordList golden = call_of({"linear", "gelu"});
  const RecordList target = call_of({"linear", "linear", "cat", "gelu"});
  ExactPairing p = pair_exact(golden, target, {});
  EXPECT_EQ(release_diverging_op_sequences(golden, target, p), 1);
  EXPECT_FALSE(paired(p, golden, "blocks.1/linear#0/forward/output/0"));
  EXPECT_TRUE(paired(p, golden, "blocks.1/gelu#0/forward/output/0"));
  EXPECT_EQ(names(golden, p.unmatched_golden),
            (std::vector<std::string>{"blocks.1/linear#0/forward/input/0", "blocks.1/linear#0/forward/output/0"}));
  EXPECT_EQ(p.unmatched_target.size(), 6u);  // both linears and the cat
}

TEST(ExactPairing, AnEquallyCountedOpOfAnotherShapeIsReleased) {
  // Both calls run one "add", but the target's adds a tensor of another shape: another computation.
  const RecordList golden = call_of({"matmul", "div", "add"});
  RecordList target = call_of({"matmul", "add"});
  for (Record& r : target)
    if (r.op == "add") r.shape = {2, 8};
  ExactPairing p = pair_exact(golden, target, {});
  EXPECT_EQ(release_diverging_op_sequences(golden, target, p), 1);
  EXPECT_FALSE(paired(p, golden, "blocks.1/add#0/forward/output/0"));
  EXPECT_TRUE(paired(p, golden, "blocks.1/matmul#0/forward/output/0"));
}

TEST(ExactPairing, EqualSequencesReleaseNothing) {
  const RecordList golden = call_of({"matmul", "softmax"});
  ExactPairing p = pair_exact(golden, golden, {});
  EXPECT_EQ(release_diverging_op_sequences(golden, golden, p), 0);
  EXPECT_EQ(p.pairs.size(), golden.size());
}

}  // namespace
}  // namespace parity::matching
