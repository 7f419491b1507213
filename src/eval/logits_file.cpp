// src/eval/logits_file.cpp — parity's compact logits file ("parity.logits/1", docs/eval.md
// "Representation"): per scored token the label's exact log-prob, the exact top-k log-probs and the
// rest of the vocabulary quantised on a uniform grid; append-only self-checking frames.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "eval/logits_format.h"
#include "parity/dtype.h"
#include "parity/dump.h"
#include "parity/eval.h"
#include "parity/regular_file.h"
#include "parity/schemas.h"

namespace parity::eval {

namespace detail {

size_t token_block_bytes(const FrameHeader& h) {
  const size_t code_bytes = h.tail_bits == 8 ? 1 : 2;
  return kTokenFixedBytes + static_cast<size_t>(h.top_k) * 12 +
         static_cast<size_t>(h.vocab - h.top_k) * code_bytes;
}

// One token row → its block. Log-probs are computed in fp64: lp_i = x_i − (m + log Σ exp(x_j − m)).
void encode_token(const float* x, int64_t vocab, int64_t label, int top_k, int tail_bits, char* out,
                  std::vector<double>& lp, std::vector<int32_t>& order) {
  lp.resize(vocab);
  bool finite_ok = true;
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < vocab; ++i) {
    if (std::isnan(x[i]) || x[i] == std::numeric_limits<float>::infinity()) finite_ok = false;
    m = std::max(m, static_cast<double>(x[i]));
  }
  if (!std::isfinite(m)) finite_ok = false;  // every logit −inf
  uint8_t flags = 0;
  if (finite_ok) {
    double s = 0;
    for (int64_t i = 0; i < vocab; ++i) s += std::exp(static_cast<double>(x[i]) - m);
    const double lse = m + std::log(s);
    for (int64_t i = 0; i < vocab; ++i) lp[i] = static_cast<double>(x[i]) - lse;
  } else {
    flags |= kTokenNonFinite;
    std::fill(lp.begin(), lp.end(), std::numeric_limits<double>::quiet_NaN());
  }
  // top-k by log-prob, ties by lower id (a deterministic order: identical logits → identical bytes).
  order.resize(vocab);
  std::iota(order.begin(), order.end(), 0);
  auto cmp = [&](int32_t a, int32_t b) {
    if (lp[a] != lp[b]) return lp[a] > lp[b];
    return a < b;
  };
  if (finite_ok) std::partial_sort(order.begin(), order.begin() + top_k, order.end(), cmp);
  const double label_lp = finite_ok ? lp[label] : std::numeric_limits<double>::quiet_NaN();

  // tail grid over the finite (probability > 0) tail values
  std::vector<uint8_t> is_head(vocab, 0);
  for (int j = 0; j < top_k; ++j) is_head[order[j]] = 1;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int64_t i = 0; i < vocab; ++i) {
    if (is_head[i] || !(std::exp(lp[i]) > 0)) continue;
    lo = std::min(lo, lp[i]);
    hi = std::max(hi, lp[i]);
  }
  const uint32_t zero_code = tail_bits == 8 ? 0xFFu : 0xFFFFu;
  const double levels = static_cast<double>(zero_code - 1);  // codes 0 .. zero_code−1
  double eta = 0;
  if (!(lo <= hi)) lo = hi = 0;  // no finite tail value
  else eta = (hi - lo) / levels;

  char* p = out;
  int32_t label32 = static_cast<int32_t>(label);
  std::memcpy(p, &label32, 4); p += 4;
  *p++ = static_cast<char>(flags); *p++ = 0; *p++ = 0; *p++ = 0;
  std::memcpy(p, &label_lp, 8); p += 8;
  std::memcpy(p, &lo, 8); p += 8;
  std::memcpy(p, &eta, 8); p += 8;
  for (int j = 0; j < top_k; ++j) { int32_t id = order[j]; std::memcpy(p, &id, 4); p += 4; }
  for (int j = 0; j < top_k; ++j) { double v = lp[order[j]]; std::memcpy(p, &v, 8); p += 8; }
  for (int64_t i = 0; i < vocab; ++i) {
    if (is_head[i]) continue;
    uint32_t code;
    if (!finite_ok || !(std::exp(lp[i]) > 0)) code = finite_ok ? zero_code : 0;
    else if (eta == 0) code = 0;
    else code = static_cast<uint32_t>(std::clamp(std::nearbyint((lp[i] - lo) / eta), 0.0, levels));
    if (tail_bits == 8) { *p++ = static_cast<char>(code); }
    else { uint16_t c = static_cast<uint16_t>(code); std::memcpy(p, &c, 2); p += 2; }
  }
}

}  // namespace detail

// ---- writer -----------------------------------------------------------------------------------------

Result<std::unique_ptr<LogitsWriter>> LogitsWriter::open(const std::filesystem::path& file,
                                                         const LogitsWriterOptions& options) {
  if (options.top_k < 1 || options.top_k > std::numeric_limits<uint16_t>::max())  // a u16 in the frame header
    return Status::Invalid(fmt::format("top_k must be between 1 and {} (got {})", std::numeric_limits<uint16_t>::max(),
                                       options.top_k));
  if (options.tail_bits != 8 && options.tail_bits != 16)
    return Status::Invalid(fmt::format("tail_bits must be 8 or 16 (got {})", options.tail_bits));
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  std::FILE* f = std::fopen(file.c_str(), "ab");
  if (!f) return Status::IOError(fmt::format("{}: cannot open for appending: {}", file.string(), std::strerror(errno)));
  std::unique_ptr<LogitsWriter> w(new LogitsWriter());
  w->file_ = f;
  w->path_ = file;
  w->options_ = options;
  return w;
}

LogitsWriter::~LogitsWriter() { (void)close(); }

Status LogitsWriter::close() {
  if (!file_) return Status::OK();
  int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) return Status::IOError(fmt::format("{}: close failed: {}", path_.string(), std::strerror(errno)));
  return Status::OK();
}

Result<int64_t> LogitsWriter::append(const float* logits, int64_t n, int64_t vocab, const int64_t* labels,
                                     int64_t ignore_index) {
  if (!file_) return Status::Invalid(fmt::format("{}: writer is closed", path_.string()));
  if (vocab < 1 || vocab > std::numeric_limits<int32_t>::max())
    return Status::Invalid(fmt::format("{}: vocabulary size {} out of range", path_.string(), vocab));
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] == ignore_index) continue;
    if (labels[i] < 0 || labels[i] >= vocab)
      return Status::Invalid(fmt::format("{}: label {} of row {} is outside the vocabulary [0, {})", path_.string(),
                                         labels[i], i, vocab));
    rows.push_back(i);
  }
  detail::FrameHeader h;
  h.vocab = static_cast<uint32_t>(vocab);
  h.top_k = static_cast<uint16_t>(std::min<int64_t>(options_.top_k, vocab));
  h.tail_bits = static_cast<uint8_t>(options_.tail_bits);
  h.step = options_.step;
  if (!options_.source_dtype.empty()) {
    auto d = dtype_from_name(options_.source_dtype);
    if (d) h.source_dtype = static_cast<uint8_t>(1 + static_cast<int>(*d));
  }
  const size_t block = detail::token_block_bytes(h);
  // Frames of at most ~16 MiB (and at least one token) keep each write bounded.
  const size_t per_frame = std::max<size_t>(1, (16u << 20) / block);
  for (size_t start = 0; start < rows.size(); start += per_frame) {
    const size_t count = std::min(per_frame, rows.size() - start);
    h.tokens = static_cast<uint32_t>(count);
    std::string payload(detail::kFrameHeaderPayloadBytes + count * block, '\0');
    detail::write_header(h, payload.data());
    char* base = payload.data() + detail::kFrameHeaderPayloadBytes;
#pragma omp parallel
    {
      std::vector<double> lp;
      std::vector<int32_t> order;
#pragma omp for schedule(static)
      for (int64_t t = 0; t < static_cast<int64_t>(count); ++t) {
        const int64_t row = rows[start + t];
        detail::encode_token(logits + row * vocab, vocab, labels[row], h.top_k, h.tail_bits, base + t * block, lp,
                             order);
      }
    }
    std::string frame = detail::frame_bytes(payload);
    if (std::fwrite(frame.data(), 1, frame.size(), file_) != frame.size() || std::fflush(file_) != 0)
      return Status::IOError(fmt::format("{}: write failed: {}", path_.string(), std::strerror(errno)));
  }
  tokens_ += static_cast<int64_t>(rows.size());
  return static_cast<int64_t>(rows.size());
}

// ---- reader -----------------------------------------------------------------------------------------

namespace {

class LogitsFileSource final : public TokenSource {
 public:
  std::string describe() const override { return path_.string() + " (" + schemas::kLogits.id + ")"; }
  int64_t tokens() const override { return static_cast<int64_t>(blocks_.size()); }
  int64_t vocab() const override { return vocab_; }
  const std::vector<Status>& problems() const override { return problems_; }
  std::string representation_json() const override {
    std::string dt = source_dtype();
    return fmt::format(R"({{"format": "{}", "top_k": {}, "tail_bits": {}, "source_dtype": {}}})", schemas::kLogits.id, top_k_,
                       tail_bits_, dt.empty() ? std::string("null") : "\"" + dt + "\"");
  }
  std::string source_dtype() const override {
    if (source_dtype_ == 0 || source_dtype_ > kNumDTypes) return "";
    return dtype_name(static_cast<DType>(source_dtype_ - 1));
  }

  Status decode(int64_t i, TokenDist& out) const override {
    if (i < 0 || i >= tokens()) return Status::Invalid(fmt::format("{}: token {} out of range", path_.string(), i));
    const Block& b = blocks_[i];
    const char* p = b.data;
    int32_t label;
    std::memcpy(&label, p, 4);
    const uint8_t flags = static_cast<uint8_t>(p[4]);
    double label_lp, lo, eta;
    std::memcpy(&label_lp, p + 8, 8);
    std::memcpy(&lo, p + 16, 8);
    std::memcpy(&eta, p + 24, 8);
    p += detail::kTokenFixedBytes;
    const int64_t V = vocab_;
    out.label = label;
    out.label_logprob = label_lp;
    out.logprob.assign(V, 0.0);
    out.error.assign(V, 0.0);
    std::vector<uint8_t> is_head(V, 0);
    const int k = b.top_k;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int j = 0; j < k; ++j) {
      int32_t id;
      double v;
      std::memcpy(&id, p + 4 * j, 4);
      std::memcpy(&v, p + 4 * k + 8 * j, 8);
      if (id < 0 || id >= V) return Status::Corrupt(fmt::format("{}: token {}: top-k id {} outside the vocabulary", path_.string(), i, id));
      is_head[id] = 1;
      out.logprob[id] = v;
      // fp64 log-softmax: a few roundings of magnitude |lp| + |lse|.
      out.error[id] = 1e-14 * (1.0 + std::fabs(v));
      if (j == 0) out.argmax = id;
    }
    p += 12 * k;
    const bool eight = b.tail_bits == 8;
    const uint32_t zero_code = eight ? 0xFFu : 0xFFFFu;
    const double half_step = 0.5 * eta;
    for (int64_t id = 0; id < V; ++id) {
      if (is_head[id]) continue;
      uint32_t code;
      if (eight) { code = static_cast<uint8_t>(*p); p += 1; }
      else { uint16_t c; std::memcpy(&c, p, 2); code = c; p += 2; }
      if (code == zero_code) {
        out.logprob[id] = -std::numeric_limits<double>::infinity();
        out.error[id] = 0;
      } else {
        double v = lo + code * eta;
        out.logprob[id] = v;
        out.error[id] = half_step + 1e-14 * (1.0 + std::fabs(v));
      }
    }
    if (flags & detail::kTokenNonFinite) {
      std::fill(out.logprob.begin(), out.logprob.end(), nan);
      out.argmax = -1;
    }
    return Status::OK();
  }

  static Result<std::unique_ptr<TokenSource>> open(const std::filesystem::path& file) {
    std::unique_ptr<LogitsFileSource> s(new LogitsFileSource());
    s->path_ = file;
    PARITY_ASSIGN_OR_RETURN(const RegularFile f, open_regular_file(file));  // never opens a FIFO
    const int fd = f.fd;
    const size_t size = static_cast<size_t>(f.size);
    if (size == 0) {
      ::close(fd);
      return Status::Invalid(fmt::format("{}: empty logits file", file.string()));
    }
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return Status::IOError(fmt::format("{}: cannot map: {}", file.string(), std::strerror(errno)));
    s->map_ = std::shared_ptr<void>(map, [size](void* m) { ::munmap(m, size); });
    const char* bytes = static_cast<const char*>(map);
    size_t pos = 0;
    while (pos < size) {
      std::string problem;
      const char* payload = nullptr;
      uint32_t len = 0;
      if (!detail::check_frame(bytes, size, pos, payload, len, problem)) {
        s->problems_.push_back(Status::Corrupt(fmt::format("{}: {}; the {} token(s) before it are used",
                                                           file.string(), problem, s->blocks_.size())));
        break;
      }
      detail::FrameHeader h;
      if (!detail::read_header(payload, len, h, problem)) {
        s->problems_.push_back(Status::Corrupt(fmt::format("{}: frame at byte {}: {}", file.string(), pos, problem)));
        break;
      }
      if (s->vocab_ == 0) {
        s->vocab_ = h.vocab;
        s->top_k_ = h.top_k;
        s->tail_bits_ = h.tail_bits;
        s->source_dtype_ = h.source_dtype;
      }
      if (h.vocab != s->vocab_) {
        s->problems_.push_back(Status::Invalid(fmt::format(
            "{}: frame at byte {} has vocabulary {} but the file started with {}; frame skipped", file.string(), pos,
            h.vocab, s->vocab_)));
      } else {
        const size_t block = detail::token_block_bytes(h);
        for (uint32_t t = 0; t < h.tokens; ++t)
          s->blocks_.push_back({payload + detail::kFrameHeaderPayloadBytes + t * block, h.top_k, h.tail_bits});
      }
      pos += detail::kFrameOverhead + len;
    }
    if (s->blocks_.empty()) {
      std::string why = s->problems_.empty() ? "" : ": " + s->problems_.front().message();
      return Status::Invalid(fmt::format("{}: no complete token record{}", file.string(), why));
    }
    return std::unique_ptr<TokenSource>(std::move(s));
  }

 private:
  struct Block {
    const char* data;
    int top_k;
    int tail_bits;
  };
  std::filesystem::path path_;
  std::shared_ptr<void> map_;
  std::vector<Block> blocks_;
  std::vector<Status> problems_;
  int64_t vocab_ = 0;
  int top_k_ = 0, tail_bits_ = 0;
  uint8_t source_dtype_ = 0;
};

}  // namespace

Result<std::unique_ptr<TokenSource>> open_logits_file(const std::filesystem::path& file) {
  return LogitsFileSource::open(file);
}

}  // namespace parity::eval
