// src/eval/logits_tensor.cpp — token distributions from full logits tensors the user already has
// (`[tokens, vocab]` or `[batch, seq, vocab]` in any format open_source reads) plus integer labels.
// Exact: log-probs are computed in fp64 from the stored values; the error bound is fp64 rounding.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "parity/eval.h"
#include "parity/open_source.h"

namespace parity::eval {

namespace {

Result<const Record*> pick_record(const RecordSource& src, const std::string& key, const std::string& what) {
  const auto& recs = src.records();
  std::vector<const Record*> usable;
  for (const Record& r : recs)
    if (r.has_data) usable.push_back(&r);
  if (!key.empty()) {
    for (const Record* r : usable)
      if (r->name == key || (r->name.size() > key.size() && r->name.ends_with(":" + key)))
        return r;
    return Status::NotFound(fmt::format("{}: no tensor named '{}' for the {}", src.describe(), key, what));
  }
  if (usable.size() == 1) return usable.front();
  std::vector<std::string> names;
  for (const Record* r : usable) names.push_back(r->name);
  return Status::Invalid(fmt::format("{}: {} tensors ({}); name the {} tensor with FILE:KEY", src.describe(),
                                     usable.size(), fmt::join(names, ", "), what));
}

class TensorTokenSource final : public TokenSource {
 public:
  std::string describe() const override { return desc_; }
  int64_t tokens() const override { return static_cast<int64_t>(rows_.size()); }
  std::string source_dtype() const override { return dtype_name(logits_.dtype); }
  int64_t vocab() const override { return vocab_; }
  const std::vector<Status>& problems() const override { return problems_; }
  std::string representation_json() const override {
    return fmt::format(R"({{"format": "logits-tensor", "dtype": "{}"}})", dtype_name(logits_.dtype));
  }

  Status decode(int64_t i, TokenDist& out) const override {
    if (i < 0 || i >= tokens()) return Status::Invalid(fmt::format("{}: token {} out of range", desc_, i));
    const int64_t row = rows_[i];
    out.logprob.resize(vocab_);
    out.error.resize(vocab_);
    decode_to_double(logits_, row * vocab_, vocab_, out.logprob.data());
    out.label = labels_[i];
    double m = -std::numeric_limits<double>::infinity();
    int64_t arg = -1;
    bool bad = false;
    for (int64_t v = 0; v < vocab_; ++v) {
      double x = out.logprob[v];
      if (std::isnan(x) || x == std::numeric_limits<double>::infinity()) bad = true;
      if (x > m) { m = x; arg = v; }
    }
    if (bad || !std::isfinite(m)) {
      std::fill(out.logprob.begin(), out.logprob.end(), std::numeric_limits<double>::quiet_NaN());
      std::fill(out.error.begin(), out.error.end(), 0.0);
      out.label_logprob = std::numeric_limits<double>::quiet_NaN();
      out.argmax = -1;
      return Status::OK();
    }
    double s = 0;
    for (int64_t v = 0; v < vocab_; ++v) s += std::exp(out.logprob[v] - m);
    const double lse = m + std::log(s);
    for (int64_t v = 0; v < vocab_; ++v) {
      out.logprob[v] -= lse;
      out.error[v] = 1e-14 * (1.0 + std::fabs(out.logprob[v]) + std::fabs(lse));
    }
    out.argmax = arg;
    out.label_logprob = out.logprob[out.label];
    return Status::OK();
  }

  static Result<std::unique_ptr<TokenSource>> open(const std::filesystem::path& logits_path,
                                                   const std::string& logits_key,
                                                   const std::filesystem::path& labels_path,
                                                   const std::string& labels_key, int64_t ignore_index) {
    std::unique_ptr<TensorTokenSource> s(new TensorTokenSource());
    PARITY_ASSIGN_OR_RETURN(s->logits_src_, open_source(logits_path));
    PARITY_ASSIGN_OR_RETURN(const Record* lr, pick_record(*s->logits_src_, logits_key, "logits"));
    if (!dtype_is_float(lr->dtype))
      return Status::TypeError(fmt::format("{}: logits tensor '{}' has dtype {}, expected a float dtype",
                                           lr->file, lr->name, dtype_name(lr->dtype)));
    if (lr->shape.size() < 2)
      return Status::Invalid(fmt::format("{}: logits tensor '{}' has shape {}, expected [tokens, vocab] or "
                                         "[batch, seq, vocab]", lr->file, lr->name, shape_to_string(lr->shape)));
    PARITY_ASSIGN_OR_RETURN(s->logits_, s->logits_src_->load(*lr));
    s->vocab_ = lr->shape.back();
    const int64_t n = s->vocab_ > 0 ? s->logits_.numel / s->vocab_ : 0;
    if (labels_path.empty())
      return Status::Invalid(fmt::format("{}: a logits tensor needs labels (--labels FILE)", logits_path.string()));
    PARITY_ASSIGN_OR_RETURN(auto label_src, open_source(labels_path));
    PARITY_ASSIGN_OR_RETURN(const Record* lab, pick_record(*label_src, labels_key, "labels"));
    if (!dtype_is_integer(lab->dtype))
      return Status::TypeError(fmt::format("{}: labels tensor '{}' has dtype {}, expected an integer dtype",
                                           lab->file, lab->name, dtype_name(lab->dtype)));
    PARITY_ASSIGN_OR_RETURN(TensorView lv, label_src->load(*lab));
    if (lv.numel != n)
      return Status::Invalid(fmt::format("{}: {} labels for {} logit rows in {} (shape {})", lab->file, lv.numel, n,
                                         lr->file, shape_to_string(lr->shape)));
    std::vector<double> lab_d(n);
    decode_to_double(lv, 0, n, lab_d.data());
    for (int64_t i = 0; i < n; ++i) {
      int64_t l = static_cast<int64_t>(lab_d[i]);
      if (l == ignore_index) continue;
      if (l < 0 || l >= s->vocab_)
        return Status::Invalid(fmt::format("{}: label {} at position {} is outside the vocabulary [0, {})", lab->file, l,
                                           i, s->vocab_));
      s->rows_.push_back(i);
      s->labels_.push_back(l);
    }
    if (s->rows_.empty())
      return Status::Invalid(fmt::format("{}: every label equals the ignore index {}", lab->file, ignore_index));
    s->desc_ = fmt::format("{} [{} tokens × {}] with labels {}", lr->file, n, s->vocab_, lab->file);
    s->problems_ = s->logits_src_->problems();
    return std::unique_ptr<TokenSource>(std::move(s));
  }

 private:
  std::unique_ptr<RecordSource> logits_src_;  // keeps the mapping alive
  TensorView logits_;
  int64_t vocab_ = 0;
  std::vector<int64_t> rows_, labels_;
  std::vector<Status> problems_;
  std::string desc_;
};

}  // namespace

Result<std::unique_ptr<TokenSource>> open_logits_tensor(const std::filesystem::path& logits,
                                                        const std::string& logits_key,
                                                        const std::filesystem::path& labels,
                                                        const std::string& labels_key, int64_t ignore_index) {
  return TensorTokenSource::open(logits, logits_key, labels, labels_key, ignore_index);
}

Result<std::unique_ptr<TokenSource>> open_token_source(const std::filesystem::path& path, int rank,
                                                       const std::filesystem::path& labels,
                                                       const std::string& logits_key,
                                                       const std::string& labels_key) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    std::vector<std::filesystem::path> candidates;
    if (rank >= 0) candidates.push_back(path / fmt::format("rank{}", rank) / "logits.plg");
    candidates.push_back(path / "logits.plg");
    if (rank < 0)
      for (int r = 0; r < 4096 && candidates.size() < 4; ++r) {
        auto p = path / fmt::format("rank{}", r) / "logits.plg";
        if (std::filesystem::exists(p, ec)) { candidates.push_back(p); break; }
      }
    for (const auto& c : candidates)
      if (std::filesystem::exists(c, ec)) return open_logits_file(c);
    return Status::NotFound(fmt::format("{}: no logits.plg in this run{} (log them with cap.log_logits or "
                                        "parity.log_logits)", path.string(),
                                        rank >= 0 ? fmt::format(" for rank {}", rank) : ""));
  }
  if (path.extension() == ".plg") return open_logits_file(path);
  return open_logits_tensor(path, logits_key, labels, labels_key);
}

}  // namespace parity::eval
