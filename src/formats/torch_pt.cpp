// A restricted reader of torch.save files (.pt) that executes no pickle code.
//
// torch.save (torch/serialization.py, `_save`, zip format since torch 1.6) writes a stored (uncompressed)
// zip: `<archive>/data.pkl` (a protocol-2 pickle of the object), `<archive>/data/<key>` (one member per
// storage, raw bytes), `<archive>/byteorder` ("little" | "big"), `<archive>/version` (the format
// version, "3\n" today) and bookkeeping members parity ignores (`.format_version`, `.storage_alignment`,
// `.data/serialization_id`). For one plain tensor the pickle is, opcode for opcode:
//
//   GLOBAL torch._utils _rebuild_tensor_v2        (v3 for dtypes without a legacy storage class: fp8)
//   MARK  MARK 'storage' GLOBAL torch FloatStorage  '<key>' '<location>' <numel> TUPLE  BINPERSID
//         <storage_offset> (<size>...) (<stride>...) <requires_grad>
//         GLOBAL collections OrderedDict EMPTY_TUPLE REDUCE      (backward hooks: always empty)
//         [GLOBAL torch float8_e4m3fn]                            (v3: the dtype)
//   TUPLE REDUCE STOP
//
// with BINPUT/BINGET memo traffic in between, and `torch._utils _rebuild_parameter` around it for an
// nn.Parameter. This file interprets exactly those opcodes on a small value stack, allows exactly those
// globals, and refuses everything else with a message naming the opcode or global: no Python, no
// import, no call of anything named in the file.
#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/npy.h"
#include "formats/tensor_file_source.h"
#include "formats/zip_directory.h"
#include "parity/formats.h"

namespace parity::formats {
namespace {

// Bounds that no torch.save of one tensor comes near, so that a hostile pickle cannot grow the stack,
// the memo or the opcode count without limit (the fuzz harness feeds arbitrary bytes here).
constexpr size_t kMaxStack = 4096;
constexpr size_t kMaxMemo = 4096;
constexpr size_t kMaxOps = 1 << 16;
constexpr size_t kMaxDims = 64;
// Tuples nest at most this deep: torch.save's rebuild arguments nest three. 65,536 TUPLE1 opcodes
// would nest as deep, and the tree's release (shared_ptr destructors, one frame a level) overflowed a
// small stack (issue 33: no recursion on input depth).
constexpr uint32_t kMaxNesting = 64;

// One value of the restricted pickle machine. Tuples share their items (shared_ptr), so BINGET of a
// big tuple is O(1) and nesting cannot multiply memory.
struct PValue;
using PRef = std::shared_ptr<const PValue>;
struct PValue {
  enum class Kind { kNone, kBool, kInt, kStr, kTuple, kGlobal, kStorage, kTensor, kOrderedDict, kMark };
  Kind kind = Kind::kNone;
  int64_t i = 0;               // kInt, kBool
  std::string s;               // kStr; kGlobal: "module name"
  std::vector<PRef> items;     // kTuple
  uint32_t nesting = 0;        // kTuple: 1 + the deepest item's
  // kStorage
  std::string key;
  bool untyped = false;        // torch.storage.UntypedStorage: numel counts bytes, dtype comes later
  DType dtype = DType::kF32;
  int64_t storage_numel = 0;
  // kTensor
  PtTensor tensor;
};

PRef make(PValue v) { return std::make_shared<const PValue>(std::move(v)); }
PRef make_int(int64_t i) {
  PValue v;
  v.kind = PValue::Kind::kInt;
  v.i = i;
  return make(std::move(v));
}

const char* kind_name(PValue::Kind k) {
  switch (k) {
    case PValue::Kind::kNone: return "None";
    case PValue::Kind::kBool: return "bool";
    case PValue::Kind::kInt: return "int";
    case PValue::Kind::kStr: return "str";
    case PValue::Kind::kTuple: return "tuple";
    case PValue::Kind::kGlobal: return "global";
    case PValue::Kind::kStorage: return "storage";
    case PValue::Kind::kTensor: return "tensor";
    case PValue::Kind::kOrderedDict: return "OrderedDict";
    case PValue::Kind::kMark: return "mark";
  }
  return "?";
}

// The legacy typed storage classes torch.save still names (torch/storage.py, `_dtype_to_storage_type_map`).
std::optional<DType> typed_storage_dtype(std::string_view cls) {
  static const std::array<std::pair<const char*, DType>, 10> kTyped = {{
      {"FloatStorage", DType::kF32}, {"DoubleStorage", DType::kF64}, {"HalfStorage", DType::kF16},
      {"BFloat16Storage", DType::kBF16}, {"LongStorage", DType::kI64}, {"IntStorage", DType::kI32},
      {"ShortStorage", DType::kI16}, {"CharStorage", DType::kI8}, {"ByteStorage", DType::kU8},
      {"BoolStorage", DType::kBool},
  }};
  for (const auto& [name, dt] : kTyped) {
    if (cls == name) return dt;
  }
  return std::nullopt;
}

// torch dtype objects pickled by name (`torch float8_e4m3fn`) for _rebuild_tensor_v3.
std::optional<DType> torch_dtype_global(std::string_view name) {
  static const std::array<std::pair<const char*, DType>, 12> kDtypes = {{
      {"float32", DType::kF32}, {"float64", DType::kF64}, {"float16", DType::kF16}, {"bfloat16", DType::kBF16},
      {"float8_e4m3fn", DType::kF8E4M3}, {"float8_e5m2", DType::kF8E5M2}, {"int8", DType::kI8},
      {"int16", DType::kI16}, {"int32", DType::kI32}, {"int64", DType::kI64}, {"uint8", DType::kU8},
      {"bool", DType::kBool},
  }};
  for (const auto& [n, dt] : kDtypes) {
    if (name == n) return dt;
  }
  return std::nullopt;
}

// Is "module name" a global a plain-tensor pickle may name?
bool allowed_global(const std::string& module, const std::string& name) {
  if (module == "torch._utils") {
    return name == "_rebuild_tensor_v2" || name == "_rebuild_tensor_v3" || name == "_rebuild_parameter";
  }
  if (module == "collections") return name == "OrderedDict";
  if (module == "torch.storage") return name == "UntypedStorage";
  if (module == "torch") return typed_storage_dtype(name).has_value() || torch_dtype_global(name).has_value() ||
                                name == "UntypedStorage";
  return false;
}

std::string opcode_text(uint8_t op, uint64_t pos) {
  char buf[64];
  if (op >= 0x20 && op < 0x7f) {
    std::snprintf(buf, sizeof buf, "pickle opcode 0x%02x ('%c') at byte %llu", op, op,
                  static_cast<unsigned long long>(pos));
  } else {
    std::snprintf(buf, sizeof buf, "pickle opcode 0x%02x at byte %llu", op, static_cast<unsigned long long>(pos));
  }
  return buf;
}

// The restricted pickle machine over data.pkl.
class Unpickler {
 public:
  explicit Unpickler(ByteRange pkl) : p_(pkl) {}

  Result<PtTensor> run() {
    for (size_t ops = 0; ops < kMaxOps; ++ops) {
      if (pos_ >= p_.size) return Status::Invalid("data.pkl ends without a STOP opcode");
      const uint64_t at = pos_;
      const uint8_t op = static_cast<uint8_t>(p_.data[pos_++]);
      if (op == '.') return finish();
      Status st = step(op, at);
      if (!st.ok()) return st;
      if (stack_.size() > kMaxStack) return Status::Invalid("data.pkl: pickle stack deeper than 4096");
    }
    return Status::Invalid("data.pkl: more than 65536 pickle opcodes for one tensor");
  }

 private:
  Result<uint64_t> read_le(int n) {
    if (!p_.contains(pos_, n)) return Status::Invalid("data.pkl is truncated inside an opcode's argument");
    const uint64_t v = p_.le(pos_, n);
    pos_ += n;
    return v;
  }
  Result<std::string> read_bytes(uint64_t n) {
    if (!p_.contains(pos_, n)) return Status::Invalid("data.pkl is truncated inside a string");
    std::string s(reinterpret_cast<const char*>(p_.data + pos_), n);
    pos_ += n;
    return s;
  }
  Result<std::string> read_line() {
    uint64_t end = pos_;
    while (end < p_.size && p_.data[end] != std::byte{'\n'} && end - pos_ < 256) ++end;
    if (end >= p_.size || p_.data[end] != std::byte{'\n'}) {
      return Status::Invalid("data.pkl: GLOBAL name not ended by a newline within 256 bytes");
    }
    std::string s(reinterpret_cast<const char*>(p_.data + pos_), end - pos_);
    pos_ = end + 1;
    return s;
  }
  Result<PRef> pop() {
    if (stack_.empty() || stack_.back()->kind == PValue::Kind::kMark) {
      return Status::Invalid("data.pkl: pickle stack underflow");
    }
    PRef v = stack_.back();
    stack_.pop_back();
    return v;
  }
  // Items above the topmost MARK, which is removed.
  Result<std::vector<PRef>> pop_to_mark() {
    auto it = std::find_if(stack_.rbegin(), stack_.rend(),
                           [](const PRef& v) { return v->kind == PValue::Kind::kMark; });
    if (it == stack_.rend()) return Status::Invalid("data.pkl: TUPLE without a MARK");
    const size_t mark = static_cast<size_t>(stack_.rend() - it) - 1;
    std::vector<PRef> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark) + 1, stack_.end());
    stack_.resize(mark);
    return items;
  }
  Status push_tuple(std::vector<PRef> items) {
    PValue v;
    v.kind = PValue::Kind::kTuple;
    for (const PRef& item : items) v.nesting = std::max(v.nesting, item->nesting);
    if (++v.nesting > kMaxNesting)
      return Status::Invalid("data.pkl: tuples nested more than " + std::to_string(kMaxNesting) + " deep");
    v.items = std::move(items);
    stack_.push_back(make(std::move(v)));
    return Status::OK();
  }
  Status memo_put(uint64_t idx) {
    if (stack_.empty()) return Status::Invalid("data.pkl: BINPUT on an empty stack");
    if (idx >= kMaxMemo) return Status::Invalid("data.pkl: memo index " + std::to_string(idx) + " above 4096");
    if (memo_.size() <= idx) memo_.resize(idx + 1);
    memo_[idx] = stack_.back();
    return Status::OK();
  }
  Status memo_get(uint64_t idx) {
    if (idx >= memo_.size() || !memo_[idx]) {
      return Status::Invalid("data.pkl: BINGET of memo entry " + std::to_string(idx) + " that was never stored");
    }
    stack_.push_back(memo_[idx]);
    return Status::OK();
  }

  Status step(uint8_t op, uint64_t at) {
    switch (op) {
      case 0x80: {  // PROTO
        PARITY_ASSIGN_OR_RETURN(uint64_t v, read_le(1));
        if (v > 5) return Status::Unsupported("data.pkl: pickle protocol " + std::to_string(v));
        return Status::OK();
      }
      case 'c': {  // GLOBAL module\nname\n
        PARITY_ASSIGN_OR_RETURN(std::string module, read_line());
        PARITY_ASSIGN_OR_RETURN(std::string name, read_line());
        if (!allowed_global(module, name)) {
          return Status::Unsupported("data.pkl: global '" + module + "." + name +
                                     "' is not one torch.save writes for a plain tensor; refused (parity "
                                     "reads tensors without executing pickle code)");
        }
        PValue v;
        v.kind = PValue::Kind::kGlobal;
        v.s = module + " " + name;
        stack_.push_back(make(std::move(v)));
        return Status::OK();
      }
      case 'q': { PARITY_ASSIGN_OR_RETURN(uint64_t i, read_le(1)); return memo_put(i); }   // BINPUT
      case 'r': { PARITY_ASSIGN_OR_RETURN(uint64_t i, read_le(4)); return memo_put(i); }   // LONG_BINPUT
      case 0x94: return memo_put(memo_.size());                                            // MEMOIZE
      case 'h': { PARITY_ASSIGN_OR_RETURN(uint64_t i, read_le(1)); return memo_get(i); }   // BINGET
      case 'j': { PARITY_ASSIGN_OR_RETURN(uint64_t i, read_le(4)); return memo_get(i); }   // LONG_BINGET
      case '(': {  // MARK
        PValue v;
        v.kind = PValue::Kind::kMark;
        stack_.push_back(make(std::move(v)));
        return Status::OK();
      }
      case 't': { PARITY_ASSIGN_OR_RETURN(std::vector<PRef> items, pop_to_mark()); return push_tuple(std::move(items)); }
      case ')': return push_tuple({});
      case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
        const size_t n = op - 0x84u;
        std::vector<PRef> items(n);
        for (size_t k = n; k-- > 0;) { PARITY_ASSIGN_OR_RETURN(items[k], pop()); }
        return push_tuple(std::move(items));
      }
      case 'X': { PARITY_ASSIGN_OR_RETURN(uint64_t n, read_le(4)); return push_str(n); }     // BINUNICODE
      case 0x8c: { PARITY_ASSIGN_OR_RETURN(uint64_t n, read_le(1)); return push_str(n); }    // SHORT_BINUNICODE
      case 'K': { PARITY_ASSIGN_OR_RETURN(uint64_t v, read_le(1)); stack_.push_back(make_int(static_cast<int64_t>(v))); return Status::OK(); }
      case 'M': { PARITY_ASSIGN_OR_RETURN(uint64_t v, read_le(2)); stack_.push_back(make_int(static_cast<int64_t>(v))); return Status::OK(); }
      case 'J': {  // BININT: signed 32-bit
        PARITY_ASSIGN_OR_RETURN(uint64_t v, read_le(4));
        stack_.push_back(make_int(static_cast<int32_t>(static_cast<uint32_t>(v))));
        return Status::OK();
      }
      case 0x8a: {  // LONG1: n little-endian two's-complement bytes (sizes above 2^31 elements)
        PARITY_ASSIGN_OR_RETURN(uint64_t n, read_le(1));
        if (n > 8) return Status::Unsupported("data.pkl: integer of " + std::to_string(n) + " bytes");
        if (n == 0) { stack_.push_back(make_int(0)); return Status::OK(); }
        PARITY_ASSIGN_OR_RETURN(uint64_t v, read_le(static_cast<int>(n)));
        if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
        stack_.push_back(make_int(static_cast<int64_t>(v)));
        return Status::OK();
      }
      case 0x88: case 0x89: {  // NEWTRUE, NEWFALSE
        PValue v;
        v.kind = PValue::Kind::kBool;
        v.i = op == 0x88 ? 1 : 0;
        stack_.push_back(make(std::move(v)));
        return Status::OK();
      }
      case 'N': stack_.push_back(make(PValue{})); return Status::OK();
      case 'Q': return persistent_load();
      case 'R': return reduce();
      default:
        return Status::Unsupported("data.pkl: " + opcode_text(op, at) +
                                   " is not one torch.save writes for a plain tensor; refused (parity reads "
                                   "tensors without executing pickle code)");
    }
  }

  Status push_str(uint64_t n) {
    PARITY_ASSIGN_OR_RETURN(std::string s, read_bytes(n));
    PValue v;
    v.kind = PValue::Kind::kStr;
    v.s = std::move(s);
    stack_.push_back(make(std::move(v)));
    return Status::OK();
  }

  // BINPERSID: ('storage', <storage class>, '<key>', '<location>', <numel>) → a storage reference.
  Status persistent_load() {
    PARITY_ASSIGN_OR_RETURN(PRef pid, pop());
    const auto& it = pid->items;
    if (pid->kind != PValue::Kind::kTuple || it.size() != 5 || it[0]->kind != PValue::Kind::kStr ||
        it[0]->s != "storage" || it[1]->kind != PValue::Kind::kGlobal || it[2]->kind != PValue::Kind::kStr ||
        it[4]->kind != PValue::Kind::kInt) {
      return Status::Unsupported("data.pkl: persistent id is not ('storage', class, key, location, numel)");
    }
    const std::string& cls = it[1]->s;
    PValue s;
    s.kind = PValue::Kind::kStorage;
    s.key = it[2]->s;
    s.storage_numel = it[4]->i;
    if (s.storage_numel < 0) return Status::Invalid("data.pkl: negative storage size");
    const std::string cls_name = cls.substr(cls.find(' ') + 1);
    if (cls_name == "UntypedStorage") {
      s.untyped = true;
      s.dtype = DType::kU8;
    } else if (auto dt = typed_storage_dtype(cls_name); dt && cls.rfind("torch ", 0) == 0) {
      s.dtype = *dt;
    } else {
      return Status::Unsupported("data.pkl: storage class '" + cls + "' is not a tensor storage");
    }
    stack_.push_back(make(std::move(s)));
    return Status::OK();
  }

  static Result<std::vector<int64_t>> int_tuple(const PRef& v, const char* what) {
    if (v->kind != PValue::Kind::kTuple) return Status::Invalid(std::string("data.pkl: tensor ") + what + " is not a tuple");
    if (v->items.size() > kMaxDims) return Status::Unsupported(std::string("data.pkl: tensor ") + what + " has more than 64 dimensions");
    std::vector<int64_t> out;
    for (const PRef& x : v->items) {
      if (x->kind != PValue::Kind::kInt || x->i < 0) {
        return Status::Invalid(std::string("data.pkl: tensor ") + what + " holds a non-integer or negative entry");
      }
      out.push_back(x->i);
    }
    return out;
  }

  static bool empty_hooks(const PRef& v) { return v->kind == PValue::Kind::kOrderedDict; }

  // _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, backward_hooks[, metadata]) and
  // _rebuild_tensor_v3(storage, offset, size, stride, requires_grad, backward_hooks, dtype[, metadata]).
  Result<PRef> rebuild_tensor(const std::vector<PRef>& a, bool v3) {
    const size_t need = v3 ? 7 : 6;
    if (a.size() != need && a.size() != need + 1) {
      return Status::Unsupported("data.pkl: _rebuild_tensor_v" + std::string(v3 ? "3" : "2") + " with " +
                                 std::to_string(a.size()) + " arguments");
    }
    if (a[0]->kind != PValue::Kind::kStorage) return Status::Invalid("data.pkl: tensor storage is not a storage reference");
    if (a[1]->kind != PValue::Kind::kInt || a[1]->i < 0) return Status::Invalid("data.pkl: tensor storage offset is not a non-negative integer");
    if (!empty_hooks(a[5])) return Status::Unsupported("data.pkl: tensor with backward hooks (not an empty OrderedDict)");
    if (a.size() == need + 1 && a[need]->kind != PValue::Kind::kNone) {
      return Status::Unsupported("data.pkl: tensor with Python attributes (metadata argument)");
    }
    PValue t;
    t.kind = PValue::Kind::kTensor;
    PtTensor& pt = t.tensor;
    const PValue& st = *a[0];
    pt.storage_key = st.key;
    pt.dtype = st.dtype;
    if (v3) {
      if (a[6]->kind != PValue::Kind::kGlobal) return Status::Invalid("data.pkl: _rebuild_tensor_v3 dtype is not a torch dtype");
      const std::string n = a[6]->s.substr(a[6]->s.find(' ') + 1);
      auto dt = torch_dtype_global(n);
      if (!dt || a[6]->s.rfind("torch ", 0) != 0) return Status::TypeError("data.pkl: unsupported dtype '" + a[6]->s + "'");
      pt.dtype = *dt;
    } else if (st.untyped) {
      return Status::Invalid("data.pkl: untyped storage without a dtype (_rebuild_tensor_v2)");
    }
    const int64_t item = dtype_size(pt.dtype);
    if (st.untyped) {
      if (st.storage_numel % item != 0) return Status::Invalid("data.pkl: untyped storage size is not a multiple of the element size");
      pt.storage_numel = st.storage_numel / item;
    } else {
      pt.storage_numel = st.storage_numel;
    }
    pt.storage_offset = a[1]->i;
    PARITY_ASSIGN_OR_RETURN(std::vector<int64_t> size, int_tuple(a[2], "size"));
    PARITY_ASSIGN_OR_RETURN(std::vector<int64_t> stride, int_tuple(a[3], "stride"));
    if (size.size() != stride.size()) return Status::Invalid("data.pkl: tensor size and stride differ in length");
    pt.shape = size;
    pt.strides = stride;
    pt.requires_grad = a[4]->kind == PValue::Kind::kBool && a[4]->i != 0;
    return make(std::move(t));
  }

  Status reduce() {
    PARITY_ASSIGN_OR_RETURN(PRef args, pop());
    PARITY_ASSIGN_OR_RETURN(PRef fn, pop());
    if (fn->kind != PValue::Kind::kGlobal || args->kind != PValue::Kind::kTuple) {
      return Status::Unsupported(std::string("data.pkl: REDUCE of a ") + kind_name(fn->kind) + " with " +
                                 kind_name(args->kind) + " arguments");
    }
    const std::string& f = fn->s;
    if (f == "collections OrderedDict") {
      if (!args->items.empty()) return Status::Unsupported("data.pkl: OrderedDict built with arguments");
      PValue v;
      v.kind = PValue::Kind::kOrderedDict;
      stack_.push_back(make(std::move(v)));
      return Status::OK();
    }
    if (f == "torch._utils _rebuild_tensor_v2" || f == "torch._utils _rebuild_tensor_v3") {
      PARITY_ASSIGN_OR_RETURN(PRef t, rebuild_tensor(args->items, f.back() == '3'));
      stack_.push_back(std::move(t));
      return Status::OK();
    }
    if (f == "torch._utils _rebuild_parameter") {  // (data, requires_grad, backward_hooks)
      const auto& a = args->items;
      if (a.size() != 3 || a[0]->kind != PValue::Kind::kTensor || !empty_hooks(a[2])) {
        return Status::Unsupported("data.pkl: _rebuild_parameter with unexpected arguments");
      }
      stack_.push_back(a[0]);
      return Status::OK();
    }
    return Status::Unsupported("data.pkl: call of global '" + f + "' refused (not a tensor constructor)");
  }

  Result<PtTensor> finish() {
    if (stack_.size() != 1 || stack_.back()->kind != PValue::Kind::kTensor) {
      return Status::Unsupported("data.pkl does not hold exactly one tensor (the pickle's result is " +
                                 std::string(stack_.empty() ? "nothing" : kind_name(stack_.back()->kind)) +
                                 "); parity reads files of one torch.save'd tensor");
    }
    return stack_.back()->tensor;
  }

  ByteRange p_;
  uint64_t pos_ = 0;
  std::vector<PRef> stack_;
  std::vector<PRef> memo_;
};

const ZipMember* find_member(const std::vector<ZipMember>& members, const std::string& name) {
  for (const ZipMember& m : members) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// A small text member (byteorder, version) as a string, trailing whitespace removed.
Result<std::string> small_text(ByteRange file, const ZipMember& m) {
  if (!m.problem.ok()) return m.problem.WithContext("member '" + m.name + "'");
  if (m.method != 0 || m.encrypted || m.compressed_size > 64) {
    return Status::Unsupported("member '" + m.name + "' is compressed, encrypted or too large");
  }
  std::string s(reinterpret_cast<const char*>(file.data + m.data_offset), m.compressed_size);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// Element layout: C-contiguous (strides returned empty) or a dense permutation of it (a transposed
// tensor: every element stored exactly once). Overlapping or gapped views are refused: torch.save
// stores the whole storage, and parity does not gather a strided subset of it.
Result<int64_t> check_layout(PtTensor& t) {
  int64_t numel = 1;
  for (int64_t d : t.shape) {
    if (d != 0 && numel > INT64_MAX / d) return Status::Invalid("element count of the tensor overflows int64");
    numel *= d;
  }
  if (numel == 0) {
    t.strides.clear();
    return numel;
  }
  std::vector<int64_t> c(t.shape.size());
  int64_t acc = 1;
  for (size_t k = t.shape.size(); k-- > 0;) {
    c[k] = acc;
    acc *= t.shape[k];
  }
  bool contiguous = true;
  for (size_t k = 0; k < t.shape.size(); ++k) contiguous = contiguous && (t.shape[k] == 1 || t.strides[k] == c[k]);
  if (contiguous) {
    t.strides.clear();
    return numel;
  }
  std::vector<size_t> order(t.shape.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t.strides[a] < t.strides[b]; });
  int64_t expect = 1;
  for (size_t k : order) {
    if (t.shape[k] == 1) continue;
    if (t.strides[k] != expect) {
      return Status::Unsupported("tensor layout with strides that overlap or leave gaps (not a dense view)");
    }
    expect *= t.shape[k];
  }
  return numel;
}

}  // namespace

Result<PtTensor> read_torch_pt(const std::byte* data, uint64_t size) {
  const ByteRange file{data, size};
  Result<std::vector<ZipMember>> listed = read_zip_directory(file);
  if (!listed.ok()) {
    // The legacy format (torch < 1.6, or _use_new_zipfile_serialization=False) is a bare pickle stream:
    // it starts with the PROTO opcode where a zip starts with "PK".
    if (size >= 2 && data[0] == std::byte{0x80}) {
      return Status::Unsupported("legacy (non-zip) torch.save format, written by torch < 1.6 or with "
                                 "_use_new_zipfile_serialization=False: not read; re-save with a current torch");
    }
    return listed.status().WithContext("not a torch.save zip file");
  }
  std::vector<ZipMember> members = std::move(*listed);
  const ZipMember* pkl = nullptr;
  for (const ZipMember& m : members) {
    const std::string_view n = m.name;
    if (n == "data.pkl" || (n.size() > 9 && n.substr(n.size() - 9) == "/data.pkl" &&
                            n.find('/') == n.size() - 9)) {
      if (pkl) return Status::Invalid("two data.pkl members ('" + pkl->name + "', '" + m.name + "')");
      pkl = &m;
    }
  }
  if (!pkl) {
    return Status::Unsupported("no '<archive>/data.pkl' member: not a torch.save zip file (legacy non-zip .pt "
                               "files, torch < 1.6, are not read)");
  }
  const std::string prefix = pkl->name.substr(0, pkl->name.size() - 8);  // "<archive>/"
  if (!pkl->problem.ok()) return pkl->problem.WithContext("member '" + pkl->name + "'");
  if (pkl->method != 0 || pkl->encrypted) {
    return Status::Unsupported("member '" + pkl->name + "' is compressed or encrypted (torch.save stores it)");
  }
  bool big_endian = false;
  if (const ZipMember* bo = find_member(members, prefix + "byteorder")) {
    PARITY_ASSIGN_OR_RETURN(std::string order, small_text(file, *bo));
    if (order == "big") {
      big_endian = true;
    } else if (order != "little") {
      return Status::Invalid("byteorder '" + order + "' is neither 'little' nor 'big'");
    }
  }
  if (const ZipMember* ver = find_member(members, prefix + "version")) {
    PARITY_ASSIGN_OR_RETURN(std::string v, small_text(file, *ver));
    // torch writes 3 (torch/csrc/jit/serialization: kProducedFileFormatVersion); 1 and 2 differ only in
    // TorchScript contents this reader never looks at.
    if (v != "1" && v != "2" && v != "3") return Status::Unsupported("torch zip format version '" + v + "' (reads 1 to 3)");
  }
  PARITY_ASSIGN_OR_RETURN(PtTensor t, Unpickler(ByteRange{data + pkl->data_offset, pkl->compressed_size}).run());
  PARITY_ASSIGN_OR_RETURN(int64_t numel, check_layout(t));
  t.numel = numel;
  t.byteswapped = big_endian;
  const ZipMember* storage = find_member(members, prefix + "data/" + t.storage_key);
  if (!storage) return Status::Invalid("storage '" + t.storage_key + "' has no member '" + prefix + "data/" + t.storage_key + "'");
  if (!storage->problem.ok()) return storage->problem.WithContext("member '" + storage->name + "'");
  if (storage->method != 0 || storage->encrypted) {
    return Status::Unsupported("member '" + storage->name + "' is compressed or encrypted (torch.save stores it)");
  }
  const uint64_t item = static_cast<uint64_t>(dtype_size(t.dtype));
  if (static_cast<uint64_t>(t.storage_numel) > storage->compressed_size / item) {
    return Status::Invalid("storage '" + t.storage_key + "' claims " + std::to_string(t.storage_numel) +
                           " elements, its member holds " + std::to_string(storage->compressed_size) + " bytes");
  }
  if (numel > 0 && (t.storage_offset > t.storage_numel || numel > t.storage_numel - t.storage_offset)) {
    return Status::Invalid("tensor of " + std::to_string(numel) + " elements at offset " +
                           std::to_string(t.storage_offset) + " exceeds its storage of " +
                           std::to_string(t.storage_numel) + " elements");
  }
  t.data_offset = storage->data_offset + static_cast<uint64_t>(t.storage_offset) * item;
  t.data_bytes = static_cast<uint64_t>(numel) * item;
  return t;
}

namespace {

bool probe_pt(const std::filesystem::path& p) { return has_extension(p, ".pt") || has_extension(p, ".pth"); }

Status list_pt(const MappedFile& file, std::vector<TensorEntry>& entries, std::vector<Status>&) {
  const std::string name = file.path().string();
  Result<PtTensor> t = read_torch_pt(file.data(), file.size());
  if (!t.ok()) return t.status().WithContext(name);
  TensorEntry e;
  e.what = name;
  e.dtype = t->dtype;
  e.shape = t->shape;
  e.strides = t->strides;
  e.byteswapped = t->byteswapped;
  e.numel = t->numel;
  e.offset = t->data_offset;
  e.size = t->data_bytes;
  entries.push_back(std::move(e));
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<RecordSource>> open_torch_pt(const std::filesystem::path& path) {
  return TensorFileSource::open(path, "pt", &list_pt, true);
}

const FormatSpec& torch_pt_format_spec() {
  static const FormatSpec spec{"pt", &probe_pt, &open_torch_pt, false, true};
  return spec;
}

}  // namespace parity::formats
