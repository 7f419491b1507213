// .safetensors reader (https://github.com/huggingface/safetensors, "Format"): an 8-byte little-endian
// header length N, N bytes of JSON {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]},
// "__metadata__": {...}}, then the byte buffer; offsets are relative to the start of the buffer, data
// is C-order little-endian. Tensors are viewed in place inside the file mapping.
#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/npy.h"
#include "formats/tensor_file_source.h"
#include "parity/formats.h"

namespace parity::formats {
namespace {

// The safetensors reference implementation refuses headers above 100 MB (MAX_HEADER_SIZE); so do we,
// before allocating anything for one.
constexpr uint64_t kMaxHeader = 100'000'000;

bool probe_safetensors(const std::filesystem::path& p) { return has_extension(p, ".safetensors"); }

std::optional<DType> st_dtype(const std::string& s) {
  static const std::pair<const char*, DType> kNames[] = {
      {"F64", DType::kF64},        {"F32", DType::kF32},        {"F16", DType::kF16},  {"BF16", DType::kBF16},
      {"F8_E4M3", DType::kF8E4M3}, {"F8_E5M2", DType::kF8E5M2}, {"I8", DType::kI8},    {"I16", DType::kI16},
      {"I32", DType::kI32},        {"I64", DType::kI64},        {"U8", DType::kU8},    {"BOOL", DType::kBool},
  };
  for (const auto& [n, t] : kNames) {
    if (s == n) return t;
  }
  return std::nullopt;
}

// Builds the header as a nlohmann::json (keys in a std::map: O(log n) per insert; ordered_json's
// vector-backed map made every insert a linear search, quadratic in the number of tensors: 40k tensors
// took 5 s) and records the top-level keys in header order, which a std::map does not keep.
class HeaderSax : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
 public:
  using Base = nlohmann::detail::json_sax_dom_parser<nlohmann::json>;
  HeaderSax(nlohmann::json& root, std::vector<std::string>& keys) : Base(root, /*allow_exceptions=*/false), keys_(keys) {}
  bool start_object(std::size_t n) { ++depth_; return Base::start_object(n); }
  bool end_object() { --depth_; return Base::end_object(); }
  bool start_array(std::size_t n) { ++depth_; return Base::start_array(n); }
  bool end_array() { --depth_; return Base::end_array(); }
  bool key(std::string& k) {
    if (depth_ == 1) keys_.push_back(k);
    return Base::key(k);
  }

 private:
  std::vector<std::string>& keys_;
  int depth_ = 0;
};

// One tensor's JSON entry -> TensorEntry (offsets made absolute). Errors describe the entry only.
Status parse_entry(const nlohmann::json& j, uint64_t buffer_start, uint64_t buffer_size, TensorEntry& e) {
  if (!j.is_object()) return Status::Invalid("entry is not a JSON object");
  const auto dt = j.find("dtype");
  const auto sh = j.find("shape");
  const auto off = j.find("data_offsets");
  if (dt == j.end() || !dt->is_string()) return Status::Invalid("missing or non-string \"dtype\"");
  if (sh == j.end() || !sh->is_array()) return Status::Invalid("missing or non-array \"shape\"");
  if (off == j.end() || !off->is_array() || off->size() != 2) return Status::Invalid("\"data_offsets\" is not [begin, end]");
  const std::string dname = dt->get<std::string>();
  const std::optional<DType> t = st_dtype(dname);
  if (!t) return Status::TypeError("unsupported dtype \"" + dname + "\"");
  e.dtype = *t;
  for (const auto& d : *sh) {
    if (!d.is_number_integer() || (d.is_number_integer() && !d.is_number_unsigned() && d.get<int64_t>() < 0)) {
      return Status::Invalid("shape " + sh->dump() + " is not a list of non-negative integers");
    }
    if (d.is_number_unsigned() && d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return Status::Invalid("shape " + sh->dump() + " has a dimension beyond int64");
    }
    e.shape.push_back(d.get<int64_t>());
  }
  PARITY_ASSIGN_OR_RETURN(e.numel, shape_numel(e.shape));
  for (const auto& o : *off) {
    if (!o.is_number_unsigned()) return Status::Invalid("data_offsets " + off->dump() + " are not non-negative integers");
  }
  const uint64_t b = (*off)[0].get<uint64_t>(), end = (*off)[1].get<uint64_t>();
  if (b > end) return Status::Invalid("data_offsets " + off->dump() + " end before they begin");
  if (end > buffer_size) {
    return Status::Invalid("data_offsets " + off->dump() + " lie outside the data buffer (" +
                           std::to_string(buffer_size) + " bytes)");
  }
  uint64_t need = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(e.numel), static_cast<uint64_t>(dtype_size(e.dtype)), &need)) {
    return Status::Invalid("data size of shape " + shape_to_string(e.shape) + " overflows");
  }
  if (end - b != need) {
    return Status::Invalid("shape " + shape_to_string(e.shape) + " " + dname + " needs " + std::to_string(need) +
                           " bytes, data_offsets " + off->dump() + " hold " + std::to_string(end - b));
  }
  e.offset = buffer_start + b;
  e.size = need;
  return Status::OK();
}

Status list_safetensors(const MappedFile& file, std::vector<TensorEntry>& entries, std::vector<Status>& problems) {
  const std::string name = file.path().string();
  const ByteRange f{file.data(), file.size()};
  if (!f.contains(0, 8)) return Status::Invalid(name + ": file too short (" + std::to_string(f.size) + " bytes) for a safetensors header");
  const uint64_t n = f.le(0, 8);
  if (n > f.size - 8) {
    return Status::Invalid(name + ": header length " + std::to_string(n) + " exceeds the file size (" +
                           std::to_string(f.size) + " bytes)");
  }
  if (n > kMaxHeader) return Status::Invalid(name + ": header length " + std::to_string(n) + " exceeds the 100 MB limit");
  const char* text = reinterpret_cast<const char*>(file.data() + 8);
  nlohmann::json header;
  std::vector<std::string> keys;  // top-level keys in header order (a repeated key: its last value, once)
  HeaderSax sax(header, keys);
  if (!nlohmann::json::sax_parse(text, text + n, &sax) || header.is_discarded())
    return Status::Invalid(name + ": header is not valid JSON");
  if (!header.is_object()) return Status::Invalid(name + ": header is not a JSON object");
  const uint64_t buffer_start = 8 + n;
  const uint64_t buffer_size = f.size - buffer_start;

  std::vector<TensorEntry> found;
  std::set<std::string_view> seen;
  for (const std::string& key : keys) {
    if (key == "__metadata__" || !seen.insert(key).second) continue;  // __metadata__: free-form strings
    const nlohmann::json& value = header.find(key).value();
    TensorEntry e;
    e.key = key;
    e.what = name + ": tensor '" + key + "'";
    const Status st = parse_entry(value, buffer_start, buffer_size, e);
    if (!st.ok()) {
      problems.push_back(st.WithContext(e.what));
      continue;
    }
    found.push_back(std::move(e));
  }
  // Tensors may not share bytes: sorted by offset, each must end before the next begins. (The reference
  // implementation also rejects holes; parity only needs every tensor's own bytes to be unambiguous.)
  std::vector<size_t> by_offset(found.size());
  for (size_t i = 0; i < found.size(); ++i) by_offset[i] = i;
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [&](size_t a, size_t b) { return found[a].offset < found[b].offset; });
  for (size_t k = 1; k < by_offset.size(); ++k) {
    const TensorEntry& prev = found[by_offset[k - 1]];
    const TensorEntry& cur = found[by_offset[k]];
    if (cur.offset < prev.offset + prev.size) {
      return Status::Invalid(name + ": data of tensors '" + prev.key + "' and '" + cur.key + "' overlap");
    }
  }
  // Records in data order: the order the writer laid the tensors out in.
  for (size_t i : by_offset) entries.push_back(std::move(found[i]));
  return Status::OK();
}

Result<std::unique_ptr<RecordSource>> open_safetensors(const std::filesystem::path& p) {
  return TensorFileSource::open(p, "safetensors", &list_safetensors, false);
}

}  // namespace

const FormatSpec& safetensors_format_spec() {
  static const FormatSpec spec{"safetensors", &probe_safetensors, &open_safetensors, false, false};
  return spec;
}

}  // namespace parity::formats
