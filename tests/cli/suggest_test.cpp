// "did you mean" (src/cli/suggest.cpp): the closest candidate by edit distance, and none when nothing
// is close enough that a user would have meant it.
#include <gtest/gtest.h>

#include "cli/suggest.h"

using parity::cli::closest;

TEST(Suggest, TyposFindTheirWord) {
  const std::vector<std::string> commands = {"compare", "curve", "overflow", "replay", "report", "ranks"};
  EXPECT_EQ(closest("comapre", commands), "compare");   // a transposition: two edits
  EXPECT_EQ(closest("comprae", commands), "compare");
  EXPECT_EQ(closest("overflw", commands), "overflow");  // a letter missing
  EXPECT_EQ(closest("repot", commands), "report");      // not "replay": report is one edit away
  EXPECT_EQ(closest("ppl", {"ppl", "mc", "lm-eval"}), "ppl");
  EXPECT_EQ(closest("pll", {"ppl", "mc", "lm-eval"}), "ppl");
  EXPECT_EQ(closest("colour", {"color", "quiet", "verbose"}), "color");
}

TEST(Suggest, NothingCloseIsNoGuess) {
  const std::vector<std::string> options = {"thresholds", "include", "exclude", "limit"};
  EXPECT_EQ(closest("zzzzzzzzzz", options), "");
  EXPECT_EQ(closest("x", options), "");  // a third of a short word may differ, but at least two edits may
  EXPECT_EQ(closest("trheshold", options), "thresholds");
  EXPECT_EQ(closest("", {}), "");
}
