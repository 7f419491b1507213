// parity/eval.h — the business layer: perplexity, token-distribution KL divergence and top-1 agreement
// of two runs over the same scored tokens (llama.cpp's definitions), multiple-choice accuracy with
// paired significance tests, and lm-evaluation-harness result comparison.
//
// Token distributions come from parity's compact logits file ("parity.logits/1", written by
// `parity.log_logits` / `cap.log_logits`: exact top-k log-probs in fp64 plus the rest of the
// vocabulary quantised, with a per-token a-posteriori KLD error bound) or from full logits tensors the
// user already has (npy / safetensors `[tokens, vocab]` plus labels). Formulas, sources, the error
// bound and every JSON schema (schemas::kEvalPpl, kEvalMc, kEvalLmEval and their CSV forms, parity/schemas.h)
// are in docs/eval.md.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parity/metrics.h"  // kNaN
#include "parity/status.h"
#include "parity/verdict.h"

namespace parity::eval {

// ---- one scored token, decoded ---------------------------------------------------------------------
// log-probabilities of the whole vocabulary (natural log, −inf for probability exactly 0) and, per
// entry, an upper bound on the absolute error of the stored value against the exact log-softmax.
struct TokenDist {
  int64_t label = -1;              // the correct next token
  double label_logprob = kNaN;     // log p(label), stored exactly (fp64)
  int64_t argmax = -1;             // most probable token (lowest id on ties)
  std::vector<double> logprob;     // [vocab]
  std::vector<double> error;       // [vocab] |stored − exact| bound (0 for exact sources)
};

// A sequence of scored tokens: a logits file or a logits tensor plus labels.
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual std::string describe() const = 0;
  virtual int64_t tokens() const = 0;
  virtual int64_t vocab() const = 0;
  virtual Status decode(int64_t i, TokenDist& out) const = 0;  // errors name the file
  virtual const std::vector<Status>& problems() const = 0;     // torn tail, skipped records
  virtual std::string representation_json() const { return "null"; }  // docs/eval.md
  // dtype_name() of the logits as the model produced them ("bf16", "f32", ...), "" when unknown.
  virtual std::string source_dtype() const { return ""; }
};

// ---- the compact logits file ("parity.logits/1", docs/eval.md "Representation") -------------------
struct LogitsWriterOptions {
  int top_k = 256;        // entries stored exactly (fp64 log-prob + id), per token; 1..65535 (16 bits)
  int tail_bits = 16;     // the rest of the vocabulary: uniform quantisation with 8 or 16 bits
  int64_t step = -1;      // stored with every record (e.g. the training step of an evaluation)
  std::string source_dtype;  // dtype the model produced the logits in ("bf16", ...), "" = unknown
};

// Appends framed records to a file (created when missing; appended to otherwise). Each append() is one
// or more self-checking frames written with one write each and flushed: a process killed at any moment
// leaves every complete record readable.
class LogitsWriter {
 public:
  static Result<std::unique_ptr<LogitsWriter>> open(const std::filesystem::path& file,
                                                    const LogitsWriterOptions& options = {});
  ~LogitsWriter();
  // logits: [n, vocab] float32 row-major; labels: [n]. Rows whose label is `ignore_index` are skipped
  // (the usual −100 of PyTorch losses). Returns the number of tokens stored.
  Result<int64_t> append(const float* logits, int64_t n, int64_t vocab, const int64_t* labels,
                         int64_t ignore_index = -100);
  Status close();
  int64_t tokens_written() const { return tokens_; }

 private:
  LogitsWriter() = default;
  std::FILE* file_ = nullptr;
  std::filesystem::path path_;
  LogitsWriterOptions options_;
  int64_t tokens_ = 0;
};

// Reads a logits file; a torn or corrupt tail is a problem, the complete records before it are used.
Result<std::unique_ptr<TokenSource>> open_logits_file(const std::filesystem::path& file);
// Full logits `[tokens, vocab]` (or `[batch, seq, vocab]`, flattened) from any tensor format parity
// reads (open_source), with integer labels from a second file (or `key` inside the same file).
// `logits_key` / `labels_key` pick the record when a file holds several ("" = the only one).
Result<std::unique_ptr<TokenSource>> open_logits_tensor(const std::filesystem::path& logits,
                                                        const std::string& logits_key,
                                                        const std::filesystem::path& labels,
                                                        const std::string& labels_key,
                                                        int64_t ignore_index = -100);
// Open a run directory (its rank<R>/logits.plg), a .plg file, or a tensor file (then `labels` is
// required).
Result<std::unique_ptr<TokenSource>> open_token_source(const std::filesystem::path& path, int rank,
                                                       const std::filesystem::path& labels,
                                                       const std::string& logits_key = "",
                                                       const std::string& labels_key = "");

// ---- per-token measures ---------------------------------------------------------------------------------
struct TokenComparison {
  double nll_golden = kNaN, nll_target = kNaN;  // −log p(label)
  double kld = kNaN;        // Σ p (log p − log q) over the renormalised decoded distributions
  double kld_bound = kNaN;  // |kld − exact KLD| ≤ kld_bound (docs/eval.md "Error bound")
  double delta_p = kNaN;    // q(label) − p(label)
  bool same_top = false;    // argmax q == argmax p
};
// golden = p ("base" in llama.cpp), target = q. Labels must agree (checked by the caller).
TokenComparison compare_token(const TokenDist& golden, const TokenDist& target);

// ---- perplexity / KLD statistics ------------------------------------------------------------------
struct ValueUnc {
  double value = kNaN, unc = kNaN;
};

struct Percentiles {  // linear interpolation at fraction·(n−1) of the sorted values (llama.cpp)
  double max = kNaN, p99_9 = kNaN, p99 = kNaN, p95 = kNaN, p90 = kNaN, p75 = kNaN, median = kNaN,
         p25 = kNaN, p10 = kNaN, p5 = kNaN, p1 = kNaN, p0_1 = kNaN, min = kNaN;
};

struct PplThresholds {
  double ppl_rel = 0.05;      // |PPL_t / PPL_g − 1| ≤ 5 % (seed 000): perplexity is judged relatively
  double ppl_diff = kNaN;     // |PPL_t − PPL_g| ≤ this when set (seed 004's 0.5 is an absolute
                              // difference that only means something at one PPL scale: opt-in)
  double kld = 0.005;         // mean KLD below this: kl_pass of the dtype (parity/thresholds.h; seed 000: bf16 0.005, fp16 1e-4)
  std::string kld_dtype = "bf16";  // which seed value was chosen (for the report)
  std::string kld_source;     // why that dtype: whose logits dtype, or the option that set it
};
// The KL threshold for one dtype: compare's kl_pass of it (default_thresholds(); bf16 0.005, f16 and f32
// 1e-4; docs/eval.md). An unknown dtype name is bf16.
PplThresholds default_ppl_thresholds(const std::string& dtype = "bf16");
// The KL threshold for the dtypes the two sides' logits were computed in ("" = unknown): that of the
// less precise known one (the larger limit), bf16 when neither is known; kld_source says which.
PplThresholds ppl_thresholds_for_logits(const std::string& golden_dtype, const std::string& target_dtype);

// What the user set of the perplexity thresholds (`parity eval ppl`'s options, parity.eval_ppl's
// arguments); whatever is unset keeps the library's choice (PplThresholds' defaults, the KL threshold of
// the logits' dtypes).
struct PplThresholdOverrides {
  std::optional<double> ppl_rel, ppl_diff;
  std::optional<double> kld;  // wins over kld_dtype
  std::string kld_dtype;      // "" = from the dtypes the two sides' logits were computed in
  // How the caller's user spells the two KL options, for kld_source ("--kld-dtype bf16", "--kld").
  std::string kld_dtype_spelling = "--kld-dtype ", kld_spelling = "--kld";
};
// The thresholds `compare_ppl` judges by: the user's overrides over the choice for the logits' dtypes
// (ppl_thresholds_for_logits) or over the named dtype's (default_ppl_thresholds); kld_source says which.
PplThresholds choose_ppl_thresholds(const PplThresholdOverrides& user, const std::string& golden_dtype,
                                    const std::string& target_dtype);

struct Check {
  std::string name;   // "ppl_rel" | "ppl_diff" | "kld" | ...
  double value = kNaN, limit = kNaN;
  bool pass = false;
};

struct PplResult {
  std::string golden_source, target_source;
  std::string golden_representation = "null", target_representation = "null";  // JSON texts
  int64_t tokens = 0;
  ValueUnc ppl_golden, ppl_target;
  ValueUnc ln_ppl_ratio, ppl_ratio, ppl_diff;
  double ln_ppl_correlation = kNaN;     // Pearson correlation of per-token nll (llama.cpp "Cor")
  ValueUnc kld;
  Percentiles kld_pct;
  double kld_bound_mean = kNaN, kld_bound_max = kNaN;  // representation error on the mean KLD
  ValueUnc delta_p;
  Percentiles delta_p_pct;
  ValueUnc delta_p_rms;
  ValueUnc same_top;
  PplThresholds thresholds;
  std::vector<Check> checks;
  std::vector<std::string> notes;       // e.g. fewer than 100 tokens
  std::vector<Status> problems;
  Verdict verdict = Verdict::kPass;
  // Per-token values (kept for the HTML report and tests; not in the JSON unless asked).
  std::vector<TokenComparison> per_token;
};

struct PplOptions {
  PplThresholds thresholds = default_ppl_thresholds();
  bool keep_per_token = false;
};

// Compares token i of golden with token i of target for every i; labels must match.
Result<PplResult> compare_ppl(const TokenSource& golden, const TokenSource& target,
                              const PplOptions& options = {});

// The llama.cpp helpers, exposed for tests: mean ± sqrt((Σx²/n − mean²)/(n−1)) (unc = 0 when n ≤ 10
// or the variance is not positive); covariance of the means (0 when n < 10); percentile.
ValueUnc mean_and_uncertainty(double sum, double sum2, int64_t count);
double covariance_of_means(double sum_a, double sum_b, double sum_ab, int64_t count);
double percentile_sorted(const std::vector<double>& sorted, double fraction);

// ---- multiple choice -----------------------------------------------------------------------------
struct McQuestion {
  std::string id;
  std::string subject;                 // "" = none
  std::vector<double> loglik;          // per choice log-likelihood
  std::vector<double> length;          // per choice length (tokens or bytes) for normalisation; may be empty
  int answer = -1;                     // index of the correct choice
};
// JSON lines, one question per line: {"id", "subject", "loglik": [...], "length": [...], "answer"}
// (what `parity.log_choices` writes), or lm-evaluation-harness --log_samples JSONL of a
// multiple-choice task (filtered_resps log-likelihoods, target index).
Result<std::vector<McQuestion>> read_mc(const std::filesystem::path& path,
                                        std::vector<Status>* problems = nullptr);

// The choice a run makes: argmax of loglik (or loglik/length with length normalisation); lowest index
// on ties. Returns −1 for an empty or all-NaN question.
int mc_choice(const McQuestion& q, bool length_normalised);

struct McNemar {
  int64_t n = 0, both_correct = 0, only_golden = 0, only_target = 0, both_wrong = 0;
  double p_value = kNaN;   // exact two-sided binomial test on the discordant pairs
};
// Exact McNemar: p = min(1, 2 · Σ_{i=0}^{min(b,c)} C(b+c, i) / 2^(b+c)); 1 when b + c = 0.
double mcnemar_exact_p(int64_t b, int64_t c);

struct BootstrapCI {
  double low = kNaN, high = kNaN, level = 0.95;
  int samples = 0;
  uint64_t seed = 0;
};
// Percentile bootstrap of mean(target_correct) − mean(golden_correct) resampling questions (pairs)
// with replacement; deterministic for a given seed.
BootstrapCI paired_bootstrap(const std::vector<uint8_t>& golden_correct,
                             const std::vector<uint8_t>& target_correct, int samples, double level,
                             uint64_t seed);

struct AccuracyThresholds {
  double pass_points = 1.0;  // |Δacc| ≤ 1 point passes (seed 000: within 1–2 points)
  double fail_points = 2.0;  // |Δacc| > 2 points fails; in between warns
  double alpha = 0.05;       // significance level for "distinguishable from zero"
};

struct PairedAccuracy {
  std::string group;           // subject or task; "" = overall
  int64_t questions = 0;
  double golden_acc = kNaN, target_acc = kNaN, diff = kNaN;  // fractions; diff = target − golden
  double golden_stderr = kNaN, target_stderr = kNaN;         // sqrt(p(1−p)/(n−1))
  double agreement = kNaN;     // fraction of questions where both runs chose the same answer
  McNemar mcnemar;
  BootstrapCI bootstrap;
  bool distinguishable = false;  // McNemar p < alpha
  Verdict verdict = Verdict::kPass;
};

// A question whose chosen answer differs between the two runs (`parity eval mc`, and the samples of
// `parity eval lm-eval`). Answers are as the runs give them: the choice index as text for multiple
// choice and log-likelihood tasks, the filtered generated answer for generation tasks.
struct AnswerFlip {
  std::string id;                  // question id / lm-eval doc_id
  std::string subject;             // mc: the question's subject ("" = none)
  std::string golden, target;      // the chosen answers (lm-eval: run A, run B)
  std::string answer;              // the correct one (mc: its index; lm-eval: the sample's "target")
  bool golden_correct = false, target_correct = false;
};
// "golden", "target", "both" or "neither": which run's answer was correct.
const char* flip_correct_name(const AnswerFlip& f);

struct McOptions {
  bool length_normalised = false;
  int bootstrap_samples = 10000;
  double level = 0.95;
  uint64_t seed = 20240501;
  AccuracyThresholds thresholds;
};

struct McResult {
  std::string golden_source, target_source;
  bool length_normalised = false;
  PairedAccuracy overall;
  std::vector<PairedAccuracy> subjects;
  std::vector<std::string> unmatched;   // question ids present on one side only
  std::vector<AnswerFlip> flips;        // questions whose chosen answer differs, in target file order
  std::vector<Status> problems;
  AccuracyThresholds thresholds;
  Verdict verdict = Verdict::kPass;
};

Result<McResult> compare_mc(const std::vector<McQuestion>& golden,
                            const std::vector<McQuestion>& target, const McOptions& options = {});
// Reads both files (read_mc) and compares them (compare_mc): the result names the files and carries the
// lines read_mc skipped first among its problems; a pass with skipped lines is a warn. An error when a
// file cannot be read (golden first) or compare_mc fails.
Result<McResult> compare_mc_files(const std::filesystem::path& golden, const std::filesystem::path& target,
                                  const McOptions& options = {});
// Paired accuracy from per-question correctness (shared by multiple choice and lm-eval samples).
PairedAccuracy paired_accuracy(const std::string& group, const std::vector<uint8_t>& golden_correct,
                               const std::vector<uint8_t>& target_correct,
                               const std::vector<uint8_t>& same_choice, const McOptions& options);

// ---- lm-evaluation-harness results ----------------------------------------------------------------
struct LmEvalMetric {
  std::string task, metric, filter;    // "acc,none" → metric "acc", filter "none"
  double a = kNaN, a_stderr = kNaN, b = kNaN, b_stderr = kNaN;
  int64_t n_a = -1, n_b = -1;          // n-samples "effective" when present
  double diff = kNaN;                  // b − a
  double z = kNaN, p_value = kNaN;     // unpaired z-test (lm-eval's comparison script)
  std::optional<PairedAccuracy> paired;  // from --log_samples
  std::vector<AnswerFlip> flips;         // from --log_samples: docs whose answer differs (this filter), by doc_id
  bool flips_listed = false;             // the logged answers decide this metric (acc, generation tasks)
  bool distinguishable = false;
  Verdict verdict = Verdict::kPass;
};

struct LmEvalSamplesPair {
  std::string task, a, b;  // the per-sample logs paired for this task
};

struct LmEvalResult {
  std::string a_source, b_source;           // the results files read
  std::vector<LmEvalSamplesPair> samples;
  std::vector<LmEvalMetric> metrics;
  std::vector<std::string> only_a, only_b;  // tasks present on one side only
  std::vector<Status> problems;
  AccuracyThresholds thresholds;
  Verdict verdict = Verdict::kPass;
};

struct LmEvalOptions {
  McOptions mc;                        // thresholds, bootstrap
  std::vector<std::string> metrics = {"acc", "acc_norm", "exact_match", "mc1", "mc2", "f1", "em"};
};

// What one lm-eval run wrote (docs/eval.md "lm-evaluation-harness results"): its results file and the
// per-task `--log_samples` files written with it. A path is a results JSON file, or the `--output_path`
// directory lm-eval writes into (`<out>/<model_name>/results_<timestamp>.json` next to
// `samples_<task>_<timestamp>.jsonl`), or that `<model_name>` directory itself.
struct LmEvalOutput {
  std::filesystem::path results;
  std::map<std::string, std::filesystem::path> samples;  // task → samples file of the same timestamp
};
// The newest results file (timestamps sort as text) of the one directory that holds results files;
// an error names the path when there is none, or the directories when several models' outputs are there.
Result<LmEvalOutput> find_lm_eval_output(const std::filesystem::path& path);

// `a` and `b` are what find_lm_eval_output takes. Explicit `samples_a[i]`/`samples_b[i]` pairs replace
// the sample files found next to the results; each pair's task is the results task its file name
// names (`samples_<task>[_<timestamp>].jsonl`), else the only task both results share.
Result<LmEvalResult> compare_lm_eval(const std::filesystem::path& a, const std::filesystem::path& b,
                                     const std::vector<std::filesystem::path>& samples_a,
                                     const std::vector<std::filesystem::path>& samples_b,
                                     const LmEvalOptions& options = {});

// ---- outputs (docs/eval.md) -------------------------------------------------------------------------
std::string ppl_json(const PplResult& r, int indent = 2);        // schemas::kEvalPpl
std::string mc_json(const McResult& r, int indent = 2);          // schemas::kEvalMc
std::string lm_eval_json(const LmEvalResult& r, int indent = 2); // schemas::kEvalLmEval
std::string mc_csv(const McResult& r);                           // schemas::kEvalMcCsv
std::string lm_eval_csv(const LmEvalResult& r);                  // schemas::kEvalLmEvalCsv
std::string ppl_tokens_csv(const PplResult& r);                  // schemas::kEvalPplCsv, per token

// Terminal summaries (≤ 100 columns), llama.cpp's layout for PPL/KLD. `colorize` wraps verdict words.
using VerdictColorizer = std::string (*)(const std::string& text, Verdict v, bool color);
std::string ppl_text(const PplResult& r, bool color, VerdictColorizer colorize);
// `max_flips`: how many answer flips to list (the count is always printed).
inline constexpr size_t kFlipsListed = 10;  // the default of max_flips (and of `parity eval`'s --flips)
std::string mc_text(const McResult& r, bool color, VerdictColorizer colorize, size_t max_flips = kFlipsListed);
std::string lm_eval_text(const LmEvalResult& r, bool color, VerdictColorizer colorize,
                         size_t max_flips = kFlipsListed);

}  // namespace parity::eval
