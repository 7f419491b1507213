// msprobe's compare_result layout of a comparison (report/msprobe_table.h). Column names, their order
// and the words msprobe writes in a cell ("unsupported", "N/A", "Nan", "pass"/"warning"/"error") are
// mindstudio-probe 26.2.0's (msprobe/core/common/const.py CompareConst); the values are parity's.
#include "report/msprobe_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "parity/tensor.h"

namespace parity::report {

namespace {

using Kind = MsprobeCell::Kind;

// msprobe's words (CompareConst).
constexpr const char* kNA = "N/A";
constexpr const char* kUnsupported = "unsupported";
constexpr const char* kNan = "Nan";
constexpr const char* kShapeUnmatched = "shape unmatched";

const std::vector<std::string>& basic_columns() {
  static const std::vector<std::string> v = {"NPU Name",         "Bench Name",         "NPU Dtype",
                                             "Bench Dtype",      "NPU Tensor Shape",   "Bench Tensor Shape",
                                             "NPU Requires_grad", "Bench Requires_grad"};
  return v;
}

std::vector<std::string> header_of(MsprobeMode mode) {
  std::vector<std::string> h = basic_columns();
  const std::vector<std::string> summary = {"NPU max",   "NPU min",   "NPU mean",   "NPU l2norm",
                                            "Bench max", "Bench min", "Bench mean", "Bench l2norm"};
  const std::vector<std::string> extract = {"Requires_grad Consistent", "Result", "Err_message"};
  if (mode == MsprobeMode::kTensor) {
    h.insert(h.end(), {"Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio",
                       "Five Thousandths Err Ratio"});
    h.insert(h.end(), summary.begin(), summary.end());
  } else if (mode == MsprobeMode::kStatistics) {
    h.insert(h.end(), {"Max diff", "Min diff", "Mean diff", "L2norm diff", "MaxRelativeErr", "MinRelativeErr",
                       "MeanRelativeErr", "NormRelativeErr"});
    h.insert(h.end(), summary.begin(), summary.end());
  } else {
    h.insert(h.end(), {"NPU MD5", "BENCH MD5"});
  }
  h.insert(h.end(), extract.begin(), extract.end());
  h.push_back("NPU_Stack_Info");  // msprobe adds it whenever the dump has a stack.json, as its dumps do
  if (mode == MsprobeMode::kTensor) h.push_back("Data_name");
  return h;
}

// The file's mode: msprobe writes one mode a file. Tensor when any pair was compared by data; md5 when
// every compared pair was compared by checksum only; statistics otherwise.
MsprobeMode mode_of(const RowList& rows) {
  size_t checksum = 0;
  for (const CompareRow& r : rows) {
    if (r.mode == CompareMode::kTensor) return MsprobeMode::kTensor;
    if (r.mode == CompareMode::kChecksum && !r.stats) ++checksum;
  }
  return checksum > 0 && checksum == rows.size() ? MsprobeMode::kMd5 : MsprobeMode::kStatistics;
}

MsprobeCell text(std::string s) { return {Kind::kText, std::move(s), 0, false}; }
MsprobeCell boolean(bool b) { return {Kind::kBool, b ? "True" : "False", 0, b}; }

// A float as msprobe's files hold it: NaN is the word "Nan"; in the CSV an infinity is " inf" (msprobe
// writes it so, that Excel opening the CSV shows inf rather than #NAME?).
MsprobeCell number(double v) {
  if (std::isnan(v)) return text(kNan);
  if (std::isinf(v)) return {Kind::kNumber, v > 0 ? " inf" : " -inf", v, false};
  return {Kind::kNumber, python_float(v), v, false};
}

// torch's spelling of a dtype, as msprobe's dump.json and compare result write it.
std::string torch_dtype(DType t) {
  switch (t) {
    case DType::kF64: return "torch.float64";
    case DType::kF32: return "torch.float32";
    case DType::kF16: return "torch.float16";
    case DType::kBF16: return "torch.bfloat16";
    case DType::kF8E4M3: return "torch.float8_e4m3fn";
    case DType::kF8E5M2: return "torch.float8_e5m2";
    case DType::kI8: return "torch.int8";
    case DType::kI16: return "torch.int16";
    case DType::kI32: return "torch.int32";
    case DType::kI64: return "torch.int64";
    case DType::kU8: return "torch.uint8";
    case DType::kBool: return "torch.bool";
  }
  return dtype_name(t);
}

// Python's repr of a str, as msprobe's Data_name cell holds its list of two names.
std::string python_str(const std::string& s) {
  const char quote = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == '\\' || c == quote) out += '\\';
    out += c;
  }
  return out + quote;
}

// The four statistics of a side as msprobe lists them (max, min, mean, l2norm).
struct Four {
  double v[4];
};
Four four(const TensorStats& s) { return {{s.max, s.min, s.mean, s.l2norm}}; }

// What a side's statistics columns show: the statistics the row compared, else the record's stored
// ones (an msprobe dump's Max/Min/Mean/Norm), else those the tensor metrics measured.
std::optional<Four> side_stats(const CompareRow* row, const Record& rec, bool golden) {
  if (row && row->stats) return four(golden ? golden_stats(*row) : target_stats(*row));
  if (rec.stats) return four(*rec.stats);
  if (row && row->metrics) return four(golden ? row->metrics->golden : row->metrics->target);
  return std::nullopt;
}

void add_stats_columns(const std::optional<Four>& npu, const std::optional<Four>& bench,
                       std::vector<MsprobeCell>& cells) {
  for (const std::optional<Four>* side : {&npu, &bench}) {
    for (int i = 0; i < 4; ++i) cells.push_back(*side ? number((**side).v[i]) : text(kNA));
  }
}

// msprobe's statistics difference and relative error of one statistic (its calc_summary_diff): equal
// values give "0" and "0"; a NaN "Nan"; an infinity on one side "inf" / "-inf"; else the difference and
// |difference / bench| in percent ("12.5%"), "inf" where the bench value is 0.
std::pair<MsprobeCell, MsprobeCell> stat_difference(double npu, double bench, double diff, double rel) {
  auto num_text = [](std::string s) { return MsprobeCell{Kind::kNumText, std::move(s), 0, false}; };
  if (npu == bench || (std::isnan(npu) && std::isnan(bench))) return {num_text("0"), num_text("0")};
  if (std::isnan(npu) || std::isnan(bench)) return {text(kNan), text(kNan)};
  if (std::isinf(npu) || std::isinf(bench)) {
    const bool positive = std::isinf(npu) ? npu > 0 : bench < 0;
    return {text(positive ? "inf" : "-inf"), text(positive ? "inf" : "-inf")};
  }
  MsprobeCell r = bench == 0 ? text("inf") : num_text(python_float(rel * 100) + "%");
  return {num_text(python_float(diff)), r};
}

void add_stats_differences(const CompareRow* row, std::vector<MsprobeCell>& cells) {
  if (!row || !row->stats) {
    cells.insert(cells.end(), 8, text(kNA));
    return;
  }
  const StatsDifferences d = stats_differences(*row);
  const Four npu = four(target_stats(*row)), bench = four(golden_stats(*row));
  const double diff[4] = {d.max_diff, d.min_diff, d.mean_diff, d.norm_diff};
  const double rel[4] = {d.max_rel, d.min_rel, d.mean_rel, d.norm_rel};
  MsprobeCell rels[4];
  for (int i = 0; i < 4; ++i) {
    auto [dc, rc] = stat_difference(npu.v[i], bench.v[i], diff[i], rel[i]);
    cells.push_back(std::move(dc));
    rels[i] = std::move(rc);
  }
  for (MsprobeCell& c : rels) cells.push_back(std::move(c));
}

// Cosine, EucDist, MaxAbsErr, MaxRelativeErr and the two ratios, with msprobe's words where it
// computes no number: "unsupported" without data on both sides (msprobe's "No real data") and, for a
// single element (msprobe squeezes it to 0-d), for all but the two maxima; "N/A" when NaN/Inf positions
// disagree; "shape unmatched" for shapes that differ.
void add_tensor_metrics(const CompareRow* row, std::vector<MsprobeCell>& cells) {
  if (row && !row->metrics && row->golden->shape != row->target->shape) {
    cells.insert(cells.end(), 6, text(kShapeUnmatched));
    return;
  }
  if (!row || !row->metrics || row->metrics->numel == 0) {
    cells.insert(cells.end(), 6, text(kUnsupported));
    return;
  }
  const PairMetrics& m = *row->metrics;
  if (!m.nonfinite_agree) {
    cells.insert(cells.end(), 6, text(kNA));
    return;
  }
  const bool scalar = m.numel == 1;
  cells.push_back(scalar ? text(kUnsupported) : number(m.cosine));
  cells.push_back(scalar ? text(kUnsupported) : number(m.euclidean));
  cells.push_back(number(m.max_abs));
  cells.push_back(number(m.max_rel));
  cells.push_back(scalar ? text(kUnsupported) : number(m.thousandth_ratio));
  cells.push_back(scalar ? text(kUnsupported) : number(m.five_thousandth_ratio));
}

// msprobe's Result words for parity's verdicts: pass → pass, warn → warning, fail and error → error.
const char* result_word(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kWarn: return "warning";
    case Verdict::kFail:
    case Verdict::kError: return "error";
  }
  return "error";
}

// Err_message: msprobe's JSON list of "<level>: <message>" texts ("[]" when the row passes), here
// parity's reason; ASCII-escaped as Python's json.dumps writes it.
std::string err_message(const std::string& level, const std::string& message) {
  if (message.empty()) return "[]";
  return nlohmann::json::array({level + ": " + message}).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

std::string data_name(const Record* r) {
  if (r == nullptr) return kNA;
  return r->has_data ? std::filesystem::path(r->file.str()).filename().string() : "-1";
}

std::string crc_text(const Record* r) {
  if (r == nullptr || !r->crc32c) return kNA;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(*r->crc32c));
  return buf;
}

std::string requires_grad(const RecordSource& src, const Record* r) {
  if (r == nullptr) return kNA;
  const std::optional<bool> rg = src.native_info(*r).requires_grad;
  return rg ? (*rg ? "True" : "False") : kNA;
}

std::string native_name(const RecordSource& src, const Record& r) {
  std::string n = src.native_info(r).name;
  return n.empty() ? std::string(r.name) : n;
}

}  // namespace

std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);  // shortest digits
  const std::string s(buf, res.ptr);
  const size_t e_at = s.find('e');
  const bool negative = s[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e_at; ++i)
    if (s[i] != '.') digits += s[i];
  const int exp = std::stoi(s.substr(e_at + 1));
  std::string out = negative ? "-" : "";
  if (exp < -4 || exp >= 16) {  // Python's repr switches to an exponent outside [1e-4, 1e16)
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + e;
  }
  if (exp < 0) return out + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  const size_t int_digits = static_cast<size_t>(exp) + 1;
  if (digits.size() <= int_digits) return out + digits + std::string(int_digits - digits.size(), '0') + ".0";
  return out + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

MsprobeTable::MsprobeTable(const CompareResult& result, const RecordSource& golden, const RecordSource& target)
    : golden_(golden), target_(target), mode_(mode_of(result.rows)), header_(header_of(mode_)) {
  items_.reserve(result.rows.size() + result.unmatched_target.size());
  for (const CompareRow& r : result.rows) items_.push_back({&r, r.target});
  for (const Record& t : result.unmatched_target) items_.push_back({nullptr, &t});
  // msprobe lists its rows in the NPU (target) dump's order.
  std::stable_sort(items_.begin(), items_.end(), [](const Item& a, const Item& b) {
    return std::tie(a.target->rank, a.target->step, a.target->order) <
           std::tie(b.target->rank, b.target->step, b.target->order);
  });
}

void MsprobeTable::row(size_t i, std::vector<MsprobeCell>& cells) const {
  cells.clear();
  const CompareRow* row = items_[i].row;
  const Record& t = *items_[i].target;
  const Record* g = row ? row->golden : nullptr;
  cells.push_back(text(native_name(target_, t)));
  cells.push_back(text(g ? native_name(golden_, *g) : kNA));
  cells.push_back(text(torch_dtype(t.dtype)));
  cells.push_back(text(g ? torch_dtype(g->dtype) : kNA));
  cells.push_back(text(shape_to_string(t.shape)));
  cells.push_back(text(g ? shape_to_string(g->shape) : kNA));
  const std::string npu_grad = requires_grad(target_, &t), bench_grad = requires_grad(golden_, g);
  cells.push_back(text(npu_grad));
  cells.push_back(text(bench_grad));
  if (mode_ == MsprobeMode::kTensor) add_tensor_metrics(row, cells);
  if (mode_ == MsprobeMode::kStatistics) add_stats_differences(row, cells);
  if (mode_ == MsprobeMode::kMd5) {
    cells.push_back(text(crc_text(&t)));
    cells.push_back(text(crc_text(g)));
  } else {
    add_stats_columns(side_stats(row, t, false), g ? side_stats(row, *g, true) : std::nullopt, cells);
  }
  cells.push_back(boolean(npu_grad == bench_grad));  // msprobe: NPU Requires_grad == Bench Requires_grad
  if (row) {
    const std::string word = result_word(row->verdict);
    cells.push_back(text(word));
    cells.push_back(text(row->verdict == Verdict::kPass ? "[]" : err_message(word, row->reason)));
  } else {  // a target record no golden one matched: parity's run fails on it (docs/compare-json.md)
    cells.push_back(text("error"));
    cells.push_back(text(err_message("error", "No bench data matched.")));
  }
  cells.push_back(text(kNA));  // NPU_Stack_Info: parity does not read stack.json
  if (mode_ == MsprobeMode::kTensor) {
    cells.push_back(text("[" + python_str(data_name(&t)) + ", " + python_str(data_name(g)) + "]"));
  }
}

}  // namespace parity::report
