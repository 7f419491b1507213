// The compact logits file: round trip, the documented KLD error bound against the exact KLD of random
// logits, exact zero for identical runs, crash safety (torn / corrupt tails).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "parity/eval.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace parity::eval;

namespace {

fs::path temp_file(const std::string& name) {
  const fs::path p = parity_test::process_temp_dir() / name;
  fs::remove(p);
  return p;
}

// Exact log-softmax in fp64 (the reference the bound is stated against).
std::vector<double> log_softmax(const float* x, int64_t V) {
  double m = -INFINITY;
  for (int64_t i = 0; i < V; ++i) m = std::max(m, static_cast<double>(x[i]));
  double s = 0;
  for (int64_t i = 0; i < V; ++i) s += std::exp(x[i] - m);
  std::vector<double> lp(V);
  for (int64_t i = 0; i < V; ++i) lp[i] = x[i] - m - std::log(s);
  return lp;
}

// KL(p‖q) summed in long double from exact log-probs.
double exact_kld(const std::vector<double>& lp, const std::vector<double>& lq) {
  long double k = 0;
  for (size_t i = 0; i < lp.size(); ++i) k += std::exp(static_cast<long double>(lp[i])) * (lp[i] - lq[i]);
  return static_cast<double>(k);
}

float round_bf16(float x) {  // round to nearest even bf16 (no NaN in these inputs)
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  u &= 0xFFFF0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

struct Case {
  int64_t V, N;
  double scale;
  int top_k, tail_bits;
};

}  // namespace

class BoundTest : public ::testing::TestWithParam<Case> {};

TEST_P(BoundTest, KldErrorBoundHolds) {
  const Case c = GetParam();
  std::mt19937_64 rng(1234 + c.V + c.top_k + c.tail_bits);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> g(c.N * c.V), t(c.N * c.V);
  std::vector<int64_t> labels(c.N);
  for (int64_t i = 0; i < c.N * c.V; ++i) {
    g[i] = static_cast<float>(c.scale) * normal(rng);
    t[i] = round_bf16(g[i] + 0.02f * normal(rng));  // a bf16-ish target
  }
  for (int64_t i = 0; i < c.N; ++i) labels[i] = static_cast<int64_t>(rng() % c.V);
  fs::path fg = temp_file("g.plg"), ft = temp_file("t.plg");
  LogitsWriterOptions o;
  o.top_k = c.top_k;
  o.tail_bits = c.tail_bits;
  {
    auto wg = LogitsWriter::open(fg, o);
    auto wt = LogitsWriter::open(ft, o);
    ASSERT_TRUE(wg.ok() && wt.ok());
    ASSERT_EQ(*(*wg)->append(g.data(), c.N, c.V, labels.data()), c.N);
    ASSERT_EQ(*(*wt)->append(t.data(), c.N, c.V, labels.data()), c.N);
  }
  auto sg = open_logits_file(fg);
  auto st = open_logits_file(ft);
  ASSERT_TRUE(sg.ok()) << sg.status().ToString();
  ASSERT_TRUE(st.ok());
  ASSERT_EQ((*sg)->tokens(), c.N);
  TokenDist dg, dt;
  double worst_ratio = 0, max_bound = 0;
  for (int64_t i = 0; i < c.N; ++i) {
    ASSERT_TRUE((*sg)->decode(i, dg).ok());
    ASSERT_TRUE((*st)->decode(i, dt).ok());
    auto lp = log_softmax(g.data() + i * c.V, c.V);
    auto lq = log_softmax(t.data() + i * c.V, c.V);
    // Stored per-entry errors are honest.
    for (int64_t v = 0; v < c.V; ++v) ASSERT_LE(std::fabs(dg.logprob[v] - lp[v]), dg.error[v]) << "entry " << v;
    EXPECT_DOUBLE_EQ(dg.label_logprob, lp[labels[i]]);
    TokenComparison tc = compare_token(dg, dt);
    const double exact = exact_kld(lp, lq);
    EXPECT_LE(std::fabs(tc.kld - exact), tc.kld_bound) << "token " << i << " exact " << exact;
    EXPECT_GE(tc.kld, 0.0);
    worst_ratio = std::max(worst_ratio, std::fabs(tc.kld - exact) / tc.kld_bound);
    max_bound = std::max(max_bound, tc.kld_bound);
  }
  // The bound is not vacuous: with the whole vocabulary exact it is tiny, otherwise ≈ η·tail mass.
  if (c.top_k >= c.V) {
    TokenComparison tc = compare_token(dg, dt);
    EXPECT_LT(tc.kld_bound, 1e-9);
  }
  // Not vacuous: η/2 is (tail range)/131070 at 16 bits and /510 at 8 bits, times at most ~4 per unit of
  // tail mass; the tail range of these logits is < 100 nats.
  EXPECT_LT(max_bound, c.tail_bits == 16 ? 4.0 * 100 / 131070 : 4.0 * 100 / 510) << "bound too loose to be useful";
  RecordProperty("max_bound", std::to_string(max_bound));
  RecordProperty("worst_error_over_bound", std::to_string(worst_ratio));
}

INSTANTIATE_TEST_SUITE_P(Representations, BoundTest,
                         ::testing::Values(Case{257, 40, 3.0, 16, 16}, Case{257, 40, 3.0, 16, 8},
                                           Case{1000, 20, 6.0, 64, 16}, Case{64, 30, 1.0, 64, 16},
                                           Case{100, 30, 10.0, 1, 16}));

TEST(LogitsFile, IdenticalRunsGiveExactlyZero) {
  const int64_t V = 300, N = 150;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.f, 2.f);
  std::vector<float> x(N * V);
  std::vector<int64_t> labels(N);
  for (auto& v : x) v = normal(rng);
  for (auto& l : labels) l = static_cast<int64_t>(rng() % V);
  fs::path a = temp_file("a.plg"), b = temp_file("b.plg");
  for (const auto& p : {a, b}) {
    auto w = LogitsWriter::open(p);
    ASSERT_TRUE(w.ok());
    // Written in two appends on one side and one on the other: same tokens, same bytes per token.
    if (p == a) {
      ASSERT_TRUE((*w)->append(x.data(), 100, V, labels.data()).ok());
      ASSERT_TRUE((*w)->append(x.data() + 100 * V, N - 100, V, labels.data() + 100).ok());
    } else {
      ASSERT_TRUE((*w)->append(x.data(), N, V, labels.data()).ok());
    }
  }
  auto sa = open_logits_file(a);
  auto sb = open_logits_file(b);
  ASSERT_TRUE(sa.ok() && sb.ok());
  auto r = compare_ppl(**sa, **sb);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tokens, N);
  EXPECT_EQ(r->kld.value, 0.0);
  EXPECT_EQ(r->kld_pct.max, 0.0);
  EXPECT_EQ(r->ppl_ratio.value, 1.0);
  EXPECT_EQ(r->ln_ppl_ratio.value, 0.0);
  EXPECT_EQ(r->ppl_diff.value, 0.0);
  EXPECT_EQ(r->delta_p.value, 0.0);
  EXPECT_EQ(r->same_top.value, 1.0);
  EXPECT_EQ(r->ppl_golden.value, r->ppl_target.value);
  EXPECT_EQ(r->verdict, parity::Verdict::kPass);
}

TEST(LogitsFile, IgnoreIndexMaskedLogitsAndBadLabels) {
  const int64_t V = 5;
  const float inf = INFINITY;
  std::vector<float> x = {1, 2, 3, -inf, 0,  /**/ 0, 0, 0, 0, 0,  /**/ NAN, 1, 2, 3, 4};
  std::vector<int64_t> labels = {2, -100, 1};
  fs::path p = temp_file("m.plg");
  {
    auto w = LogitsWriter::open(p, {.top_k = 2, .tail_bits = 16, .step = 3, .source_dtype = ""});
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(*(*w)->append(x.data(), 3, V, labels.data()), 2);
    std::vector<int64_t> bad = {7};
    auto r = (*w)->append(x.data(), 1, V, bad.data());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("m.plg"), std::string::npos);
  }
  auto s = open_logits_file(p);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ((*s)->tokens(), 2);
  TokenDist d;
  ASSERT_TRUE((*s)->decode(0, d).ok());
  EXPECT_EQ(d.argmax, 2);
  EXPECT_TRUE(std::isinf(d.logprob[3]) && d.logprob[3] < 0) << "masked logit stays probability 0";
  ASSERT_TRUE((*s)->decode(1, d).ok());
  EXPECT_TRUE(std::isnan(d.label_logprob)) << "non-finite logits decode to NaN";
}

TEST(LogitsFile, TornAndCorruptTails) {
  const int64_t V = 50;
  std::vector<float> x(10 * V);
  std::vector<int64_t> labels(10, 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(i * 0.37) * 3);
  fs::path p = temp_file("torn.plg");
  {
    auto w = LogitsWriter::open(p);
    ASSERT_TRUE((*w)->append(x.data(), 6, V, labels.data()).ok());
    ASSERT_TRUE((*w)->append(x.data() + 6 * V, 4, V, labels.data()).ok());
  }
  std::string bytes;
  {
    std::ifstream in(p, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 7);
  auto s = open_logits_file(p);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->tokens(), 6);
  ASSERT_EQ((*s)->problems().size(), 1u);
  EXPECT_NE((*s)->problems()[0].message().find("torn frame"), std::string::npos);
  std::string corrupt = bytes;
  corrupt[40] ^= 1;  // inside the first frame's payload
  std::ofstream(p, std::ios::binary | std::ios::trunc) << corrupt;
  auto c = open_logits_file(p);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("checksum"), std::string::npos) << c.status().message();
  std::ofstream(p, std::ios::binary | std::ios::trunc) << "";
  EXPECT_FALSE(open_logits_file(p).ok());
}
