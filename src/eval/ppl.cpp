// src/eval/ppl.cpp — perplexity, KL divergence, Δp and same-top statistics of two runs over the same
// scored tokens, with llama.cpp's definitions (tools/perplexity/perplexity.cpp, kl_divergence();
// docs/eval.md has every formula) and parity's representation error bound per token.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "parity/thresholds.h"

#include "parity/dtype.h"
#include "parity/eval.h"

namespace parity::eval {

ValueUnc mean_and_uncertainty(double sum, double sum2, int64_t count) {
  // llama.cpp's formula, held once with the KL accumulator (parity/metrics.h).
  const MeanUnc mu = llama_mean_and_uncertainty(sum, sum2, count);
  return {mu.mean, mu.unc};
}

double covariance_of_means(double sum_a, double sum_b, double sum_ab, int64_t count) {
  if (count < 10) return 0.0;
  double var = sum_ab / count - (sum_a / count) * (sum_b / count);
  return var / (count - 1);
}

double percentile_sorted(const std::vector<double>& v, double fraction) {
  if (v.empty()) return kNaN;
  if (fraction <= 0) return v.front();
  if (fraction >= 1) return v.back();
  double p = fraction * (v.size() - 1);
  size_t ip = static_cast<size_t>(p);
  p -= ip;
  return (1 - p) * v[ip] + p * v[std::min(ip + 1, v.size() - 1)];
}

namespace {

double median_sorted(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  const size_t n = v.size();
  return n % 2 == 0 ? 0.5 * (v[n / 2] + v[n / 2 - 1]) : v[n / 2];
}

Percentiles percentiles_of(std::vector<double> v) {
  Percentiles p;
  // NaN values (tokens whose logits were non-finite) would break the ordering; they are counted in
  // the means (which become NaN) and left out here.
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  p.max = v.back();
  p.p99_9 = percentile_sorted(v, 0.999);
  p.p99 = percentile_sorted(v, 0.99);
  p.p95 = percentile_sorted(v, 0.95);
  p.p90 = percentile_sorted(v, 0.90);
  p.p75 = percentile_sorted(v, 0.75);
  p.median = median_sorted(v);
  p.p25 = percentile_sorted(v, 0.25);
  p.p10 = percentile_sorted(v, 0.10);
  p.p5 = percentile_sorted(v, 0.05);
  p.p1 = percentile_sorted(v, 0.01);
  p.p0_1 = percentile_sorted(v, 0.001);
  p.min = v.front();
  return p;
}

// log Σ exp(a_i), with the max subtracted.
double log_sum_exp(const std::vector<double>& a) {
  double m = -std::numeric_limits<double>::infinity();
  for (double x : a) m = std::max(m, x);
  if (!std::isfinite(m)) return m;
  double s = 0;
  for (double x : a) s += std::exp(x - m);
  return m + std::log(s);
}

}  // namespace

PplThresholds default_ppl_thresholds(const std::string& dtype) {
  PplThresholds t;
  auto d = dtype_from_name(dtype);
  DType dt = d.value_or(DType::kBF16);
  // The KL bound of compare's thresholds table (kl_pass, parity/thresholds.h): one value per dtype for
  // compare's logits rows and eval's mean KLD alike.
  t.kld = default_thresholds().for_dtype(dt).kl_pass;
  t.kld_dtype = dtype_name(dt);
  return t;
}

PplThresholds ppl_thresholds_for_logits(const std::string& golden_dtype, const std::string& target_dtype) {
  const bool g = dtype_from_name(golden_dtype).has_value(), t = dtype_from_name(target_dtype).has_value();
  if (!g && !t) {
    PplThresholds th = default_ppl_thresholds("bf16");
    th.kld_source = "the logits dtype is unknown on both sides (not recorded): bf16 assumed";
    return th;
  }
  if (g != t) {
    PplThresholds th = default_ppl_thresholds(g ? golden_dtype : target_dtype);
    th.kld_source = fmt::format("the {} logits' dtype (the other side's is unknown)", g ? "golden" : "target");
    return th;
  }
  const PplThresholds tg = default_ppl_thresholds(golden_dtype), tt = default_ppl_thresholds(target_dtype);
  // The less precise side bounds how close the distributions can be: its limit applies.
  PplThresholds th = tt.kld >= tg.kld ? tt : tg;
  th.kld_source = tg.kld_dtype == tt.kld_dtype
                      ? fmt::format("both sides' logits are {}", th.kld_dtype)
                      : fmt::format("the less precise logits dtype (golden {}, target {})", tg.kld_dtype, tt.kld_dtype);
  return th;
}

TokenComparison compare_token(const TokenDist& golden, const TokenDist& target) {
  TokenComparison tc;
  tc.nll_golden = -golden.label_logprob;
  tc.nll_target = -target.label_logprob;
  tc.delta_p = std::exp(target.label_logprob) - std::exp(golden.label_logprob);
  tc.same_top = golden.argmax >= 0 && golden.argmax == target.argmax;
  const size_t V = golden.logprob.size();
  // The one KL row policy (parity/metrics.h, docs/metrics.md "KL divergence"): a side holding NaN or
  // +Inf, or −Inf everywhere, has no distribution and the token no KLD.
  if (kl_row_skip(golden.logprob.data(), target.logprob.data(), static_cast<int64_t>(V)) != KlSkip::kNone) {
    tc.kld = tc.kld_bound = kNaN;
    return tc;
  }
  // Renormalise both decoded vectors into proper distributions (docs/eval.md "Decoding and KLD").
  const double zp = log_sum_exp(golden.logprob);
  const double zq = log_sum_exp(target.logprob);
  double kld = 0, bound = 0, abs_terms = 0;
  for (size_t i = 0; i < V; ++i) {
    const double lp = golden.logprob[i] - zp;
    const double p = std::exp(lp);
    if (p == 0) continue;  // 0 · log(0/q) = 0
    const double lq = target.logprob[i] - zq;
    if (std::isinf(lq)) {  // p > 0, q = 0
      kld = std::numeric_limits<double>::infinity();
      bound = std::numeric_limits<double>::infinity();
      break;
    }
    const double r = lp - lq;
    kld += p * r;
    abs_terms += p * std::fabs(r);
    // |δ_i| ≤ d_i = e_i + |log Z̃_P|, |γ_i| ≤ g_i likewise; |p̃ − p| ≤ p̃ (e^d − 1); |r| ≤ |r̃| + d + g.
    const double d = golden.error[i] + std::fabs(zp);
    const double g = target.error[i] + std::fabs(zq);
    bound += p * (std::expm1(d) * (std::fabs(r) + d + g) + d + g);
  }
  // fp64 evaluation of the sum itself: V terms, relative error ≤ V·2^-53 of Σ|terms|, plus a floor.
  tc.kld = kld;
  tc.kld_bound = bound + static_cast<double>(V) * 1.2e-16 * abs_terms + 1e-12;
  return tc;
}

namespace {

// Every token of both sides decoded and compared (in parallel; the first decode error is returned).
struct TokenPairs {
  std::vector<TokenComparison> per;
  std::vector<uint8_t> label_mismatch;  // the two sides score different labels: skipped
  std::vector<uint8_t> nonfinite;       // NaN log-probabilities on a side: left out of every statistic
  int64_t nonfinite_golden = 0, nonfinite_target = 0;
};

Status compare_all_tokens(const TokenSource& golden, const TokenSource& target, int64_t n, TokenPairs& out) {
  out.per.resize(static_cast<size_t>(n));
  out.label_mismatch.assign(static_cast<size_t>(n), 0);
  std::vector<Status> errors(n);
#pragma omp parallel
  {
    TokenDist g, t;
#pragma omp for schedule(dynamic, 16)
    for (int64_t i = 0; i < n; ++i) {
      Status sg = golden.decode(i, g);
      Status st = sg.ok() ? target.decode(i, t) : sg;
      if (!st.ok()) { errors[i] = st; continue; }
      if (g.label != t.label) { out.label_mismatch[i] = 1; continue; }
      out.per[i] = compare_token(g, t);
    }
  }
  for (const Status& e : errors)
    if (!e.ok()) return e;
  return Status::OK();
}

// Tokens whose labels differ: an error when none agrees (not the same evaluation data), else a problem.
Status note_label_mismatches(const TokenSource& golden, const TokenSource& target, const TokenPairs& pairs,
                             PplResult& r) {
  const int64_t n = static_cast<int64_t>(pairs.per.size());
  int64_t mismatches = 0, first_mismatch = -1;
  for (int64_t i = 0; i < n; ++i)
    if (pairs.label_mismatch[i] && mismatches++ == 0) first_mismatch = i;
  if (mismatches == n)
    return Status::Invalid(fmt::format("the labels of {} and {} never agree: not the same evaluation data",
                                       golden.describe(), target.describe()));
  if (mismatches > 0)
    r.problems.push_back(Status::Invalid(fmt::format(
        "{} token(s) have different labels on the two sides (first at token {}); they are skipped", mismatches,
        first_mismatch)));
  return Status::OK();
}

// A token whose log-probabilities are not finite (NaN logits on one side) would turn every statistic
// into NaN: it is named, counted and left out of the sums; a target that produces them fails (judge_ppl).
void flag_nonfinite_tokens(TokenPairs& pairs, PplResult& r) {
  const int64_t n = static_cast<int64_t>(pairs.per.size());
  pairs.nonfinite.assign(static_cast<size_t>(n), 0);
  int64_t first_nonfinite = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (pairs.label_mismatch[i]) continue;
    const TokenComparison& t = pairs.per[i];
    const bool g_bad = std::isnan(t.nll_golden), t_bad = std::isnan(t.nll_target) || std::isnan(t.kld);
    if (!g_bad && !t_bad) continue;
    pairs.nonfinite[i] = 1;
    pairs.nonfinite_golden += g_bad;
    pairs.nonfinite_target += t_bad && !g_bad;
    if (first_nonfinite < 0) first_nonfinite = i;
  }
  if (first_nonfinite >= 0)
    r.problems.push_back(Status::Invalid(fmt::format(
        "{} token(s) have NaN log-probabilities ({} in the target only, {} in the golden; first at token {}): left "
        "out of every statistic", pairs.nonfinite_golden + pairs.nonfinite_target, pairs.nonfinite_target,
        pairs.nonfinite_golden, first_nonfinite)));
}

// llama.cpp's running sums (its kl_divergence_result), in fp64, in token order (deterministic): add
// each token, then finish into the result.
struct PplAccumulator {
  double sum_nll = 0, sum_nll2 = 0, sum_base = 0, sum_base2 = 0, sum_cross = 0;
  KlAccumulator kld;  // the one KL accumulator (parity/metrics.h): llama.cpp's Σkld, Σkld² in token order
  double sum_dp = 0, sum_dp2 = 0, sum_dp4 = 0;
  double bound_sum = 0, bound_max = 0;
  int64_t same_top = 0, count = 0;
  std::vector<double> klds, dps;

  void add(const TokenComparison& t) {
    sum_nll += t.nll_target;
    sum_nll2 += t.nll_target * t.nll_target;
    sum_base += t.nll_golden;
    sum_base2 += t.nll_golden * t.nll_golden;
    sum_cross += t.nll_target * t.nll_golden;
    kld.add(t.kld);
    sum_dp += t.delta_p;
    const double dp2 = t.delta_p * t.delta_p;
    sum_dp2 += dp2;
    sum_dp4 += dp2 * dp2;
    bound_sum += t.kld_bound;
    bound_max = std::max(bound_max, t.kld_bound);
    same_top += t.same_top;
    klds.push_back(t.kld);
    dps.push_back(t.delta_p);
    ++count;
  }

  // Perplexities, their ratio and difference with the uncertainties of correlated means (llama.cpp).
  void finish_ppl(PplResult& r) const {
    const ValueUnc log_ppl = mean_and_uncertainty(sum_nll, sum_nll2, count);
    const ValueUnc log_base = mean_and_uncertainty(sum_base, sum_base2, count);
    r.ppl_target = {std::exp(log_ppl.value), std::exp(log_ppl.value) * log_ppl.unc};
    r.ppl_golden = {std::exp(log_base.value), std::exp(log_base.value) * log_base.unc};
    const double cov = covariance_of_means(sum_nll, sum_base, sum_cross, count);
    r.ln_ppl_correlation = cov / (log_ppl.unc * log_base.unc);
    r.ln_ppl_ratio = {log_ppl.value - log_base.value,
                      std::sqrt(log_ppl.unc * log_ppl.unc + log_base.unc * log_base.unc - 2.0 * cov)};
    r.ppl_ratio = {std::exp(r.ln_ppl_ratio.value), std::exp(r.ln_ppl_ratio.value) * r.ln_ppl_ratio.unc};
    const double ppl_cov = r.ppl_target.value * r.ppl_golden.value * cov;
    r.ppl_diff = {r.ppl_target.value - r.ppl_golden.value,
                  std::sqrt(r.ppl_target.unc * r.ppl_target.unc + r.ppl_golden.unc * r.ppl_golden.unc - 2.0 * ppl_cov)};
  }

  // KL divergence, Δp and same-top.
  void finish_distributions(PplResult& r) {
    const KlSummary k = kld.finish();
    r.kld = k.count > 0 ? ValueUnc{k.mean, k.unc} : ValueUnc{0.0, 0.0};  // llama.cpp's 0 ± 0 for no tokens
    r.kld_pct = percentiles_of(std::move(klds));
    r.kld_bound_mean = count ? bound_sum / count : kNaN;
    r.kld_bound_max = bound_max;
    r.delta_p = mean_and_uncertainty(sum_dp, sum_dp2, count);
    r.delta_p_pct = percentiles_of(std::move(dps));
    const ValueUnc mse = mean_and_uncertainty(sum_dp2, sum_dp4, count);
    const double rms = std::sqrt(mse.value);
    r.delta_p_rms = {rms, rms > 0 ? 0.5 / rms * mse.unc : 0.0};
    const double f = count ? static_cast<double>(same_top) / count : kNaN;
    r.same_top = {f, count > 1 ? std::sqrt(f * (1 - f) / (count - 1)) : kNaN};
  }

  void finish(PplResult& r) {
    r.tokens = count;
    finish_ppl(r);
    finish_distributions(r);
    if (count < 100)
      r.notes.push_back(fmt::format("only {} token(s): llama.cpp prints no final statistics below 100; the "
                                    "uncertainties are rough", count));
  }
};

// Checks against the seed criteria, and the verdict: a failed check or NaN the target produced where
// the golden did not fails; a problem makes a pass a warning.
void judge_ppl(const PplThresholds& th, int64_t nonfinite_target, PplResult& r) {
  auto check = [&](const char* name, double value, double limit, bool strict) {
    bool pass = strict ? value < limit : value <= limit;
    r.checks.push_back({name, value, limit, pass && !std::isnan(value)});
  };
  check("ppl_rel", std::fabs(r.ppl_ratio.value - 1.0), th.ppl_rel, false);
  if (!std::isnan(th.ppl_diff)) check("ppl_diff", std::fabs(r.ppl_diff.value), th.ppl_diff, false);
  check("kld", r.kld.value, th.kld, true);
  r.verdict = Verdict::kPass;
  for (const Check& c : r.checks)
    if (!c.pass) r.verdict = Verdict::kFail;
  if (nonfinite_target > 0) r.verdict = Verdict::kFail;
  if (r.verdict == Verdict::kPass && !r.problems.empty()) r.verdict = Verdict::kWarn;
}

}  // namespace

Result<PplResult> compare_ppl(const TokenSource& golden, const TokenSource& target, const PplOptions& options) {
  if (golden.vocab() != target.vocab())
    return Status::Invalid(fmt::format("vocabulary sizes differ: {} has {}, {} has {}", golden.describe(),
                                       golden.vocab(), target.describe(), target.vocab()));
  PplResult r;
  r.golden_source = golden.describe();
  r.target_source = target.describe();
  r.golden_representation = golden.representation_json();
  r.target_representation = target.representation_json();
  r.thresholds = options.thresholds;
  r.problems = golden.problems();
  r.problems.insert(r.problems.end(), target.problems().begin(), target.problems().end());
  const int64_t n = std::min(golden.tokens(), target.tokens());
  if (golden.tokens() != target.tokens())
    r.problems.push_back(Status::Invalid(fmt::format(
        "token counts differ: golden {} , target {}; the first {} are compared", golden.tokens(), target.tokens(), n)));

  TokenPairs pairs;
  PARITY_RETURN_NOT_OK(compare_all_tokens(golden, target, n, pairs));
  PARITY_RETURN_NOT_OK(note_label_mismatches(golden, target, pairs, r));
  flag_nonfinite_tokens(pairs, r);
  PplAccumulator sums;
  sums.klds.reserve(n);
  sums.dps.reserve(n);
  for (int64_t i = 0; i < n; ++i)
    if (!pairs.label_mismatch[i] && !pairs.nonfinite[i]) sums.add(pairs.per[i]);
  sums.finish(r);
  judge_ppl(options.thresholds, pairs.nonfinite_target, r);
  if (options.keep_per_token) {
    for (int64_t i = 0; i < n; ++i)
      if (!pairs.label_mismatch[i]) r.per_token.push_back(pairs.per[i]);
  }
  return r;
}

}  // namespace parity::eval
