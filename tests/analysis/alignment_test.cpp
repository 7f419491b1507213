// Mapping files and order-based alignment of records left unmatched by exact names.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "parity/matching.h"

namespace parity::matching {
namespace {

Record rec(const std::string& name, const std::string& op, const std::string& role, Shape shape, int64_t order,
           const std::string& direction = "forward") {
  Record r;
  r.name = name;
  r.op = op;
  r.role = role;
  r.shape = std::move(shape);
  r.order = order;
  r.direction = direction;
  r.step = 0;
  r.rank = 0;
  return r;
}

TEST(NameMap, ExactPrefixAndRegexRules) {
  auto m = parse_name_map(
      "# comment\n"
      "model.decoder => model   # module prefix\n"
      "re:^blk\\.(\\d+)\\.(.*)$ => layers.$1.$2\n"
      "lm_head/forward/output/0 => head/forward/output/0\n",
      "map.txt");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->rules.size(), 3u);
  EXPECT_EQ(m->apply("model.decoder.layers.0/forward/output/0"), "model.layers.0/forward/output/0");
  EXPECT_EQ(m->apply("model.decoder/forward/input/0"), "model/forward/input/0");
  EXPECT_EQ(m->apply("model.decoderx/forward/input/0"), "");  // not a path prefix
  EXPECT_EQ(m->apply("blk.3.attn/softmax#0/forward/output/0"), "layers.3.attn/softmax#0/forward/output/0");
  EXPECT_EQ(m->apply("lm_head/forward/output/0"), "head/forward/output/0");
  EXPECT_EQ(m->apply("other"), "");
}

TEST(NameMap, ErrorsNameFileAndLine) {
  auto bad = parse_name_map("a => b\nno arrow here\n", "m.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("m.txt:2"), std::string::npos) << bad.status().message();
  auto re = parse_name_map("re:([a => b\n", "m.txt");
  ASSERT_FALSE(re.ok());
  EXPECT_NE(re.status().message().find("not a valid regular expression"), std::string::npos);
  auto missing = load_name_map("/nonexistent/map.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/map.txt"), std::string::npos);
}

// A quantifier applied to a quantifier ("a**") was accepted by libstdc++'s std::regex and matched in
// exponential time (fuzz/regressions/map/timeout-7830…: 40 stars after one atom never finished). RE2
// refuses it; the error names file and line. Lazy quantifiers, escapes, classes and bounds still parse.
TEST(NameMap, QuantifierOfAQuantifierIsAnError) {
  for (const char* bad : {"re:a** => b", "re:(x+{2}) => b", "re:a*?+ => b", "re:(\\xff" "****************) => b"}) {
    auto m = parse_name_map(std::string("ok => fine\n") + bad + "\n", "m.txt");
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_NE(m.status().message().find("m.txt:2"), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find("not a valid regular expression"), std::string::npos) << m.status().message();
  }
  auto ok = parse_name_map("re:^a.*?(b+)?[*+?]\\*{2}c{1,3}(?:d)\\.$ => x\n", "m.txt");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->apply("azzbb*+**cc.d."), "");
  EXPECT_EQ(ok->apply("azzbb***cd."), "x");
}

// Nested unbounded quantifiers are valid and made std::regex_match backtrack exponentially on a record
// name (fuzz/regressions/map/timeout-4658…, left open until RE2): matched by an automaton now, a name of
// 100,000 characters that fails to match at its last one takes linear time.
TEST(NameMap, NestedQuantifiersMatchInLinearTime) {
  auto m = parse_name_map("re:^blk\\.(\\d+)|.(.*)+x$ => layers.$1\n", "m.txt");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::string name(100000, 'a');
  EXPECT_EQ(m->apply(name), "");
  EXPECT_EQ(m->apply(name + "x"), "layers.");  // group 1 did not take part: empty
  EXPECT_EQ(m->apply("blk.12"), "layers.12");
}

// Back-references (RE2 has none) and bounds above RE2's 1000 are errors naming file and line; a
// back-reference or bound of more than 9 digits once overflowed a long inside libstdc++'s regex compiler
// (UBSan, fuzz/regressions/map/crash-3c17…). A replacement naming a group the pattern lacks is an error too.
TEST(NameMap, BackReferencesHugeBoundsAndMissingGroupsAreErrors) {
  // ("\\555…" is an octal escape followed by digits in RE2, and "a{99999999999}" literal text: valid
  // patterns, no longer a hazard.)
  for (const char* bad : {"re:(a)\\1 => b", "re:a{1001} => b", "re:a{2,1001} => b", "re:(a)(b) => x$3"}) {
    auto m = parse_name_map(std::string(bad) + "\n", "m.txt");
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_NE(m.status().message().find("m.txt:1"), std::string::npos) << m.status().message();
  }
  auto ok = parse_name_map("re:(a)a{2,3}\\{1234567890} => x$1$$$&\n", "m.txt");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->apply("aaa{1234567890}"), "xa$aaa{1234567890}");
}

TEST(Align, ExtraCastAndRenamedModuleDoNotShiftTheRest) {
  // Golden: l0 (Linear) → act (GELU) → l1 (Linear) → head (Linear); target renamed everything, has an
  // extra cast after l0 and fused act into l0's successor name.
  RecordList g = {
      rec("l0/forward/output/0", "Linear", "output", {2, 8}, 0),
      rec("act/forward/output/0", "GELU", "output", {2, 8}, 1),
      rec("l1/forward/output/0", "Linear", "output", {2, 4}, 2),
      rec("head/forward/output/0", "Linear", "output", {2, 16}, 3),
  };
  RecordList t = {
      rec("fc0/forward/output/0", "Linear", "output", {2, 8}, 0),
      rec("fc0/to#0/forward/output/0", "to", "output", {2, 8}, 1),  // extra cast
      rec("gelu/forward/output/0", "GELU", "output", {2, 8}, 2),
      rec("fc1/forward/output/0", "Linear", "output", {2, 4}, 3),
      rec("lm_head/forward/output/0", "Linear", "output", {16, 2}, 4),  // same count, other layout
  };
  ExactPairing p = pair_exact(g, t, RecordFilter{});
  ASSERT_EQ(p.pairs.size(), 0u);
  std::vector<std::string> notes;
  auto kinds = extend_pairing(g, t, p, nullptr, /*align=*/true, AlignOptions{}, notes);
  ASSERT_EQ(p.pairs.size(), 4u);
  EXPECT_EQ(p.pairs[0], std::make_pair(size_t{0}, size_t{0}));
  EXPECT_EQ(p.pairs[1], std::make_pair(size_t{1}, size_t{2}));  // GELU to GELU, the cast skipped
  EXPECT_EQ(p.pairs[2], std::make_pair(size_t{2}, size_t{3}));
  EXPECT_EQ(p.pairs[3], std::make_pair(size_t{3}, size_t{4}));
  for (const PairMatch& k : kinds) {
    EXPECT_EQ(k.kind, MatchKind::kAligned);
    EXPECT_GT(k.confidence, 0.0);
    EXPECT_LE(k.confidence, 1.0);
  }
  ASSERT_EQ(p.unmatched_target.size(), 1u);
  EXPECT_EQ(t[p.unmatched_target[0]].name, "fc0/to#0/forward/output/0");
  EXPECT_TRUE(p.unmatched_golden.empty());
}

TEST(Align, NeverPairsDifferentRolesOrElementCounts) {
  RecordList g = {rec("a/forward/input/0", "Linear", "input", {4}, 0),
                           rec("a/forward/output/0", "Linear", "output", {4}, 1)};
  RecordList t = {rec("b/forward/output/0", "Linear", "output", {5}, 0),
                           rec("b/forward/input/0", "Linear", "input", {4}, 1)};
  ExactPairing p = pair_exact(g, t, RecordFilter{});
  std::vector<std::string> notes;
  extend_pairing(g, t, p, nullptr, true, AlignOptions{}, notes);
  ASSERT_EQ(p.pairs.size(), 1u);
  EXPECT_EQ(p.pairs[0], std::make_pair(size_t{0}, size_t{1}));  // input with input; 4 ≠ 5 stays apart
  EXPECT_EQ(p.unmatched_golden.size(), 1u);
  EXPECT_EQ(p.unmatched_target.size(), 1u);
}

TEST(Align, MappedBeforeAlignedAndExactKept) {
  RecordList g = {rec("same/forward/output/0", "Linear", "output", {4}, 0),
                           rec("layers.0/forward/output/0", "Block", "output", {4}, 1),
                           rec("x/forward/output/0", "Linear", "output", {4}, 2)};
  RecordList t = {rec("same/forward/output/0", "Linear", "output", {4}, 0),
                           rec("h.0/forward/output/0", "Block", "output", {4}, 1),
                           rec("y/forward/output/0", "Linear", "output", {4}, 2)};
  auto m = parse_name_map("re:^h\\.(\\d+)(.*)$ => layers.$1$2\n", "m.txt");
  ASSERT_TRUE(m.ok());
  ExactPairing p = pair_exact(g, t, RecordFilter{});
  std::vector<std::string> notes;
  auto kinds = extend_pairing(g, t, p, &*m, true, AlignOptions{}, notes);
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_EQ(kinds[0].kind, MatchKind::kExact);
  EXPECT_EQ(kinds[1].kind, MatchKind::kMapped);
  EXPECT_EQ(kinds[2].kind, MatchKind::kAligned);
  EXPECT_EQ(kinds[0].confidence, 1.0);
  EXPECT_EQ(p.pairs[2], std::make_pair(size_t{2}, size_t{2}));
  // Without alignment the last pair stays unmatched.
  ExactPairing q = pair_exact(g, t, RecordFilter{});
  extend_pairing(g, t, q, &*m, false, AlignOptions{}, notes);
  EXPECT_EQ(q.pairs.size(), 2u);
  EXPECT_EQ(q.unmatched_golden.size(), 1u);
}

Record op_rec(const std::string& module, const std::string& op, int k, const std::string& role, Shape shape,
              int64_t order) {
  Record r = rec(module + "/" + op + "#" + std::to_string(k) + "/forward/" + role + "/0", op, role, std::move(shape), order);
  r.module = module;
  return r;
}

// The issue's case: the target computes `blocks.0.ffn.gate` as chunked matmuls summed (same maths,
// other ops). Its `linear#0` output must pair with the gate's own last op, never with an op of
// `blocks.0.ffn.up` that happens to sit at the same position in execution order.
TEST(Align, NeverAcrossModulesAndChunkedLinearPairsWithItsOwnResult) {
  RecordList g = {op_rec("blocks.0.ffn.gate", "linear", 0, "output", {2, 8}, 0),
                           op_rec("blocks.0.ffn.up", "linear", 0, "output", {2, 8}, 1)};
  RecordList t = {op_rec("blocks.0.ffn.gate", "matmul", 0, "output", {2, 8}, 0),
                           op_rec("blocks.0.ffn.gate", "matmul", 1, "output", {2, 8}, 1),
                           op_rec("blocks.0.ffn.gate", "add", 0, "output", {2, 8}, 2),
                           op_rec("blocks.0.ffn.up", "matmul", 0, "output", {2, 8}, 3),
                           op_rec("blocks.0.ffn.up", "matmul", 1, "output", {2, 8}, 4),
                           op_rec("blocks.0.ffn.up", "add", 0, "output", {2, 8}, 5)};
  ExactPairing p = pair_exact(g, t, RecordFilter{});
  std::vector<std::string> notes;
  auto kinds = extend_pairing(g, t, p, nullptr, true, AlignOptions{}, notes);
  ASSERT_EQ(p.pairs.size(), 2u);
  for (size_t k = 0; k < p.pairs.size(); ++k) {
    EXPECT_EQ(g[p.pairs[k].first].module, t[p.pairs[k].second].module) << g[p.pairs[k].first].name;
    EXPECT_EQ(t[p.pairs[k].second].op, "add") << "the module's result, not a partial sum";
    EXPECT_LT(kinds[k].confidence, 0.5) << "one golden op against three target ops: a weak pairing";
  }
}

TEST(Align, BudgetExceededIsANoteNotAFailure) {
  RecordList g = {rec("a", "Linear", "output", {4}, 0), rec("b", "Linear", "output", {4}, 1)};
  RecordList t = {rec("c", "Linear", "output", {4}, 0), rec("d", "Linear", "output", {4}, 1)};
  ExactPairing p = pair_exact(g, t, RecordFilter{});
  std::vector<std::string> notes;
  AlignOptions tiny;
  tiny.max_cells = 3;
  extend_pairing(g, t, p, nullptr, true, tiny, notes);
  EXPECT_TRUE(p.pairs.empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("alignment skipped"), std::string::npos);
}

}  // namespace
}  // namespace parity::matching
