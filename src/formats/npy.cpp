// .npy reader: header parsing and validation, and the single-file FormatSpec.
#include "formats/npy.h"

#include <bit>
#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "formats/tensor_file_source.h"
#include "parity/formats.h"

namespace parity::formats {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

// A value of the header dict. Only what .npy headers contain: strings, booleans, tuples of ints; a
// list or dict (structured dtypes) is recognised only to be rejected with a clear message.
struct Value {
  enum Kind { kString, kBool, kTuple, kOther } kind = kOther;
  std::string str;
  bool b = false;
  std::vector<int64_t> ints;
};

// Recursive-descent parser of the Python dict literal numpy writes (ast.literal_eval subset). Containers
// nest at most kMaxNesting deep: numpy writes one level (the shape tuple), a structured dtype's descr a few
// more; a crafted 64 KB header of 32,000 '(' would otherwise recurse once per level and overflow the stack
// (issue 33 §1). numpy itself refuses such a file.
class DictParser {
 public:
  DictParser(const char* p, size_t n) : p_(p), n_(n) {}

  Status parse(std::vector<std::pair<std::string, Value>>& out) {
    skip_ws();
    if (!eat('{')) return err("expected '{'");
    skip_ws();
    while (!peek('}')) {
      Value key;
      PARITY_RETURN_NOT_OK(parse_value(key, 1));
      if (key.kind != Value::kString) return err("expected a string key");
      skip_ws();
      if (!eat(':')) return err("expected ':'");
      skip_ws();
      Value v;
      PARITY_RETURN_NOT_OK(parse_value(v, 1));
      out.emplace_back(key.str, std::move(v));
      skip_ws();
      if (eat(',')) {
        skip_ws();
        continue;
      }
      if (!peek('}')) return err("expected ',' or '}'");
    }
    eat('}');
    skip_ws();
    if (i_ != n_) return err("unexpected text after the dict");
    return Status::OK();
  }

 private:
  static constexpr int kMaxNesting = 64;

  // `depth`: the containers open around this value, the header's dict being 1.
  Status parse_value(Value& v, int depth) {
    if (i_ >= n_) return err("unexpected end of header");
    const char c = p_[i_];
    if (c == '\'' || c == '"') {
      ++i_;
      v.kind = Value::kString;
      while (i_ < n_ && p_[i_] != c) {
        if (p_[i_] == '\\') return err("escape sequences are not supported in header strings");
        v.str.push_back(p_[i_++]);
      }
      if (!eat(c)) return err("unterminated string");
      return Status::OK();
    }
    if (match_word("True")) { v.kind = Value::kBool; v.b = true; return Status::OK(); }
    if (match_word("False")) { v.kind = Value::kBool; v.b = false; return Status::OK(); }
    if (c == '(' || c == '[') {
      if (depth >= kMaxNesting)
        return err("containers nested more than " + std::to_string(kMaxNesting) + " deep (numpy writes 1–3)");
      const char close = c == '(' ? ')' : ']';
      ++i_;
      v.kind = Value::kTuple;
      skip_ws();
      while (!peek(close)) {
        if (i_ < n_ && (p_[i_] == '(' || p_[i_] == '[' || p_[i_] == '\'' || p_[i_] == '"' || p_[i_] == '{')) {
          // Nested containers/strings: a structured dtype description. Skip it to report the dtype,
          // not a syntax error.
          Value inner;
          PARITY_RETURN_NOT_OK(parse_value(inner, depth + 1));
          v.kind = Value::kOther;
        } else {
          int64_t x = 0;
          PARITY_RETURN_NOT_OK(parse_int(x));
          v.ints.push_back(x);
        }
        skip_ws();
        if (eat(',')) {
          skip_ws();
          continue;
        }
        if (!peek(close)) return err(std::string("expected ',' or '") + close + "'");
      }
      eat(close);
      return Status::OK();
    }
    if (c == '{') {
      // A dict value (structured dtype with names/formats): parse and mark as unsupported.
      int depth = 0;
      do {
        if (p_[i_] == '{') ++depth;
        if (p_[i_] == '}') --depth;
        ++i_;
      } while (i_ < n_ && depth > 0);
      if (depth != 0) return err("unterminated '{'");
      v.kind = Value::kOther;
      return Status::OK();
    }
    return err("unexpected character '" + std::string(1, c) + "'");
  }

  Status parse_int(int64_t& x) {
    const size_t start = i_;
    bool neg = false;
    if (i_ < n_ && (p_[i_] == '-' || p_[i_] == '+')) neg = p_[i_++] == '-';
    if (i_ >= n_ || !std::isdigit(static_cast<unsigned char>(p_[i_]))) {
      i_ = start;
      return err("expected an integer");
    }
    uint64_t v = 0;
    while (i_ < n_ && std::isdigit(static_cast<unsigned char>(p_[i_]))) {
      const uint64_t d = static_cast<uint64_t>(p_[i_++] - '0');
      if (v > (static_cast<uint64_t>(INT64_MAX) - d) / 10) return err("integer does not fit in int64");
      v = v * 10 + d;
    }
    if (i_ < n_ && (p_[i_] == 'L' || p_[i_] == 'l')) ++i_;  // Python 2 long suffix in old files: (3L, 4L)
    x = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return Status::OK();
  }

  bool match_word(const char* w) {
    const size_t len = std::strlen(w);
    if (n_ - i_ >= len && std::memcmp(p_ + i_, w, len) == 0) {
      i_ += len;
      return true;
    }
    return false;
  }
  void skip_ws() {
    while (i_ < n_ && (p_[i_] == ' ' || p_[i_] == '\t' || p_[i_] == '\n' || p_[i_] == '\r')) ++i_;
  }
  bool peek(char c) const { return i_ < n_ && p_[i_] == c; }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++i_;
    return true;
  }
  Status err(const std::string& what) const {
    return Status::Invalid("malformed .npy header at byte " + std::to_string(i_) + ": " + what);
  }

  const char* p_;
  size_t n_;
  size_t i_ = 0;
};

// numpy type string ("<f4", ">i8", "|b1") -> dtype and byte order.
Status parse_descr(const std::string& descr, DType& dtype, bool& byteswapped) {
  if (descr.size() < 3) return Status::TypeError("unsupported dtype '" + descr + "'");
  const char order = descr[0];
  const std::string code = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return Status::TypeError("unsupported dtype '" + descr + "' (unknown byte order '" + std::string(1, order) + "')");
  }
  static const std::pair<const char*, DType> kCodes[] = {
      {"f8", DType::kF64}, {"f4", DType::kF32}, {"f2", DType::kF16}, {"i1", DType::kI8}, {"i2", DType::kI16},
      {"i4", DType::kI32}, {"i8", DType::kI64}, {"u1", DType::kU8},  {"b1", DType::kBool},
  };
  for (const auto& [c, t] : kCodes) {
    if (code == c) {
      dtype = t;
      const bool file_big = order == '>';
      const bool file_little = order == '<';
      // '|' (not applicable) and '=' (native) need no swap; 1-byte types never do.
      byteswapped = dtype_size(t) > 1 && ((file_big && std::endian::native == std::endian::little) ||
                                          (file_little && std::endian::native == std::endian::big));
      return Status::OK();
    }
  }
  std::string hint;
  if (code[0] == 'V') hint = " (raw void bytes; bfloat16 written through ml_dtypes is stored this way)";
  if (code[0] == 'c') hint = " (complex numbers)";
  if (code[0] == 'u') hint = " (only u1 of the unsigned types is supported)";
  return Status::TypeError("unsupported dtype '" + descr + "'" + hint);
}

bool probe_npy(const std::filesystem::path& p) { return has_extension(p, ".npy"); }

Status list_npy(const MappedFile& file, std::vector<TensorEntry>& entries, std::vector<Status>&) {
  const std::string name = file.path().string();
  const ByteRange bytes{file.data(), file.size()};
  Result<NpyHeader> h = parse_npy_header(bytes);
  if (!h.ok()) return h.status().WithContext(name);
  const uint64_t present = file.size() - h->data_offset;
  if (h->data_bytes > present) {
    return Status::Invalid(name + ": header claims " + std::to_string(h->data_bytes) + " bytes of data (" +
                           shape_to_string(h->shape) + " " + dtype_name(h->dtype) + "), file has " +
                           std::to_string(present));
  }
  TensorEntry e = npy_entry(*h, name);
  e.offset = h->data_offset;
  e.size = h->data_bytes;
  entries.push_back(std::move(e));
  return Status::OK();
}

Result<std::unique_ptr<RecordSource>> open_npy(const std::filesystem::path& p) {
  return TensorFileSource::open(p, "npy", &list_npy, true);
}

}  // namespace

TensorEntry npy_entry(const NpyHeader& h, const std::string& what) {
  TensorEntry e;
  e.what = what;
  e.dtype = h.dtype;
  e.shape = h.shape;
  e.strides = h.strides();
  e.byteswapped = h.byteswapped;
  e.numel = h.numel;
  return e;
}

std::vector<int64_t> NpyHeader::strides() const {
  if (!fortran_order || shape.size() < 2) return {};
  std::vector<int64_t> s(shape.size());
  int64_t stride = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    s[d] = stride;
    stride *= shape[d];  // cannot overflow: the product of all dimensions was checked
  }
  return s;
}

Result<uint64_t> npy_header_end(ByteRange b) {
  if (!b.contains(0, 8)) return Status::Invalid("file too short for a .npy header (" + std::to_string(b.size) + " bytes)");
  if (std::memcmp(b.data, kMagic, kMagicLen) != 0) return Status::Invalid("not a .npy file (bad magic bytes)");
  const int major = static_cast<int>(b.le(6, 1)), minor = static_cast<int>(b.le(7, 1));
  if (major == 1) {
    if (!b.contains(8, 2)) return Status::Invalid("file too short for a .npy header (" + std::to_string(b.size) + " bytes)");
    return 10 + b.le(8, 2);
  }
  if (major == 2 || major == 3) {
    if (!b.contains(8, 4)) return Status::Invalid("file too short for a .npy header (" + std::to_string(b.size) + " bytes)");
    return 12 + b.le(8, 4);
  }
  return Status::Unsupported("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
}

Result<NpyHeader> parse_npy_header(ByteRange b) {
  PARITY_ASSIGN_OR_RETURN(uint64_t end, npy_header_end(b));
  const uint64_t start = b.le(6, 1) == 1 ? 10 : 12;
  if (end > b.size) {
    return Status::Invalid("header length " + std::to_string(end - start) + " exceeds the file size (" +
                           std::to_string(b.size) + " bytes)");
  }
  std::vector<std::pair<std::string, Value>> dict;
  PARITY_RETURN_NOT_OK(DictParser(reinterpret_cast<const char*>(b.data + start), end - start).parse(dict));
  const Value* descr = nullptr;
  const Value* fortran = nullptr;
  const Value* shape = nullptr;
  for (const auto& [k, v] : dict) {
    if (k == "descr") descr = &v;
    if (k == "fortran_order") fortran = &v;
    if (k == "shape") shape = &v;
  }
  if (!descr || !fortran || !shape) {
    return Status::Invalid("malformed .npy header: missing key '" +
                           std::string(!descr ? "descr" : !fortran ? "fortran_order" : "shape") + "'");
  }
  if (descr->kind != Value::kString) return Status::TypeError("unsupported dtype: structured (record) arrays are not tensors");
  if (fortran->kind != Value::kBool) return Status::Invalid("malformed .npy header: 'fortran_order' is not True/False");
  if (shape->kind != Value::kTuple) return Status::Invalid("malformed .npy header: 'shape' is not a tuple of integers");
  NpyHeader h;
  PARITY_RETURN_NOT_OK(parse_descr(descr->str, h.dtype, h.byteswapped));
  h.fortran_order = fortran->b;
  h.shape = shape->ints;
  PARITY_ASSIGN_OR_RETURN(h.numel, shape_numel(h.shape));
  if (__builtin_mul_overflow(static_cast<uint64_t>(h.numel), static_cast<uint64_t>(dtype_size(h.dtype)), &h.data_bytes)) {
    return Status::Invalid("data size of shape " + shape_to_string(h.shape) + " overflows");
  }
  h.data_offset = end;
  return h;
}

bool has_extension(const std::filesystem::path& path, const char* ext) {
  const std::string s = path.filename().string();
  const size_t n = std::strlen(ext);
  if (s.size() <= n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (std::tolower(static_cast<unsigned char>(s[s.size() - n + i])) != ext[i]) return false;
  }
  return true;
}

const FormatSpec& npy_format_spec() {
  static const FormatSpec spec{"npy", &probe_npy, &open_npy, false, true};
  return spec;
}

}  // namespace parity::formats
