// InternedString: one pool entry per distinct text, equal texts at one address, read like std::string.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "parity/interned_string.h"

namespace parity {
namespace {

TEST(InternedString, EqualTextsShareOneAddressWhereverTheyCameFrom) {
  std::string built = "layers.0.attn";
  built += "/forward/output/0";
  const InternedString a = built;
  const InternedString b("layers.0.attn/forward/output/0");
  const InternedString c = std::string_view(built).substr(0);
  EXPECT_EQ(&a.str(), &b.str());
  EXPECT_EQ(&a.str(), &c.str());
  EXPECT_EQ(a, b);
  built[0] = 'X';  // the pool holds its own copy
  EXPECT_EQ(a, "layers.0.attn/forward/output/0");
  EXPECT_NE(&InternedString("layers.0.attn").str(), &a.str());
}

TEST(InternedString, ReadsAsTheStringItHolds) {
  const InternedString s = "model.layers.3.mlp/forward/output/0";
  const std::string& ref = s;
  const std::string_view view = s;
  EXPECT_EQ(ref, "model.layers.3.mlp/forward/output/0");
  EXPECT_EQ(view.size(), s.size());
  EXPECT_TRUE(s.starts_with("model.layers.3"));
  EXPECT_TRUE(s.ends_with("/0"));
  EXPECT_EQ(s.find('/'), ref.find('/'));
  EXPECT_EQ(s.rfind("/forward"), ref.rfind("/forward"));
  EXPECT_EQ(s.substr(0, 5), "model");
  EXPECT_EQ(s + "#1", ref + "#1");
  EXPECT_EQ("x:" + s, "x:" + ref);
  EXPECT_EQ(s[6], 'l');
  EXPECT_EQ(std::string(s.begin(), s.end()), ref);
  InternedString t = s;
  t.clear();
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t, InternedString());
  EXPECT_EQ(t, "");
  EXPECT_FALSE(s.empty());
}

TEST(InternedString, OrdersByTextNotByAddress) {
  // Interned in an order other than the text order, so addresses (pool nodes) do not follow it.
  const std::vector<InternedString> texts = {"zeta", "alpha", "mid", "alpha.b", "", "Zeta"};
  std::vector<InternedString> sorted = texts;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> expected(texts.begin(), texts.end());
  std::sort(expected.begin(), expected.end());
  ASSERT_EQ(sorted.size(), expected.size());
  for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], expected[i]) << i;
  std::map<InternedString, int> by_text = {{"b", 2}, {"a", 1}};
  EXPECT_EQ(by_text.begin()->first, "a");
}

TEST(InternedString, ThreadsInterningTheSameTextsGetTheSameAddresses) {
  // What the listing threads do: every thread interns every rank's names at once.
  constexpr int kTexts = 2000;
  const int threads = std::max(2, omp_get_max_threads());
  std::vector<std::vector<const std::string*>> seen(threads, std::vector<const std::string*>(kTexts));
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < threads; ++t)
    for (int i = 0; i < kTexts; ++i) {
      const int k = (i * 7 + t * 13) % kTexts;  // each thread in its own order
      seen[t][k] = &InternedString("interned_string_test.thread." + std::to_string(k)).str();
    }
  std::set<const std::string*> distinct;
  for (int i = 0; i < kTexts; ++i) {
    for (int t = 1; t < threads; ++t) EXPECT_EQ(seen[t][i], seen[0][i]) << i;
    EXPECT_EQ(*seen[0][i], "interned_string_test.thread." + std::to_string(i));
    distinct.insert(seen[0][i]);
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kTexts));
}

TEST(InternedString, ThePoolGrowsWithDistinctTextsNotWithCopies) {
  const InternedString::PoolSize before = InternedString::pool_size();
  std::vector<InternedString> copies;
  for (int rank = 0; rank < 100; ++rank)
    for (int e = 0; e < 10; ++e) copies.emplace_back("interned_string_test.pool.event" + std::to_string(e));
  const InternedString::PoolSize after = InternedString::pool_size();
  EXPECT_EQ(after.texts - before.texts, 10u);
  EXPECT_EQ(after.characters - before.characters, 10u * std::string("interned_string_test.pool.event0").size());
  const InternedString empty = "";
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(InternedString::pool_size().texts, after.texts);  // "" is not a pool entry
}

}  // namespace
}  // namespace parity
