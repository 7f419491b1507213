// msprobe dumps (Huawei MindStudio Probe, PyPI `mindstudio-probe`) as a RecordSource.
//
// Layout written by msprobe's dump (msprobe/core/dump/data_dump/json_writer.py):
//   DUMP_PATH/step<N>/rank<R>/ (proc<pid>/ when torch.distributed is not initialised)
//     dump.json       {"task": "tensor"|"statistics", "level": "L0"|"L1"|"mix", "framework", "dump_data_dir",
//                      "data": {"<entry>": {"input_args": [...], "input_kwargs": {...}, "output": [...],
//                                          "parameters": {...}} | {"input": [...], "output": [...]} | ...}}
//     construct.json  {"<entry>": "<parent module entry>" | null}   (parents of API calls at level mix)
//     stack.json      call stacks (not read)
//     dump_tensor_data/<entry>.<input|output|parameters>.<i>.pt      (task "tensor"; .npy for MindSpore)
// Entries: modules `Module.<path>.<Class>.<forward|backward|parameters_grad>.<call>`, APIs
// `<Prefix>.<api>.<call>.<forward|backward>` (Prefix: Functional, Torch, Tensor, NPU, Distributed, Aten ...).
// Each tensor: {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [...], "Max", "Min", "Mean",
// "Norm", "requires_grad", ["md5"], ["data_name"]}.
//
// Records get parity's identity (docs/dump-format.md "Names"; docs/formats.md "msprobe dumps"), so that
// msprobe↔msprobe and msprobe↔parity-capture runs pair by name:
//   Module.layers.0.Linear.forward.0.input.0        → layers.0/forward/input/0
//   Module.layers.0.Linear.forward.1.output.0       → layers.0#1/forward/output/0
//   Module.layers.0.Linear.forward.0.parameters.weight → layers.0/forward/parameter/weight
//   Module.layers.0.Linear.parameters_grad.0.weight → layers.0/backward/grad/weight
//   Functional.linear.0.forward.input.0             → <parent>/linear#<k>/forward/input/0
// where <parent> is the module call construct.json names (or <global>) and k counts the calls of that
// API within that parent, as parity's capture counts them. Indexes count tensors depth-first through
// args then kwargs (non-tensor arguments get none), as the capture does.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/npy.h"
#include "parity/formats.h"
#include "parity/json_depth.h"

namespace parity::formats {
namespace {

using ojson = nlohmann::ordered_json;  // file order matters: it is msprobe's execution order
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Python's json module writes NaN, Infinity and -Infinity as bare tokens (allow_nan=True), which is not
// JSON. Outside strings they are rewritten as the strings "NaN", "Infinity", "-Infinity".
std::string python_json_to_json(std::string_view in) {
  std::string out;
  out.reserve(in.size() + 64);
  bool in_string = false;
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < in.size()) {
        out.push_back(in[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out.push_back(c);
      continue;
    }
    bool replaced = false;
    for (std::string_view tok : {std::string_view("NaN"), std::string_view("-Infinity"), std::string_view("Infinity")}) {
      if (in.compare(i, tok.size(), tok) == 0) {
        out += '"';
        out += tok;
        out += '"';
        i += tok.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out.push_back(c);
  }
  return out;
}

// A statistic as dumped: a number, a bool (bool tensors: Max = any, Min = all), a non-finite token, or
// absent/null (float64 tensors get no Mean/Norm at msprobe's default precision): NaN.
double stat_value(const ojson& t, const char* key) {
  auto it = t.find(key);
  if (it == t.end()) return kNaN;
  if (it->is_number()) return it->get<double>();
  if (it->is_boolean()) return it->get<bool>() ? 1.0 : 0.0;
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return kNaN;
}

bool is_tensor_entry(const ojson& v) {
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape")) return false;
  auto ty = v.find("type");
  return ty == v.end() || (ty->is_string() && ty->get_ref<const std::string&>().find("Tensor") != std::string::npos) ||
         (ty->is_string() && ty->get_ref<const std::string&>() == "numpy.ndarray");
}

// A parsed entry name.
struct EntryName {
  bool is_module = false;
  std::string module;     // module path ("<root>" for the model itself)
  std::string op;         // module class or API name
  std::string prefix;     // API prefix (Functional, Torch, ...)
  std::string kind;       // forward | backward | parameters_grad
  int64_t call = 0;       // msprobe's call number
};

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 18 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '.') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

std::string join_dots(const std::vector<std::string>& t, size_t begin, size_t end) {
  std::string s;
  for (size_t k = begin; k < end; ++k) s += (k > begin ? "." : "") + t[k];
  return s;
}

std::optional<EntryName> parse_entry_name(const std::string& key) {
  const std::vector<std::string> t = split_dots(key);
  EntryName e;
  if (t.size() >= 4 && t[0] == "Module") {
    e.is_module = true;
    e.kind = t[t.size() - 2];
    if (!all_digits(t.back()) || (e.kind != "forward" && e.kind != "backward" && e.kind != "parameters_grad")) {
      return std::nullopt;
    }
    e.call = std::stoll(t.back());
    e.op = t[t.size() - 3];
    e.module = join_dots(t, 1, t.size() - 3);
    if (e.module.empty()) e.module = "<root>";
    return e;
  }
  if (t.size() >= 4) {
    e.kind = t.back();
    if (!all_digits(t[t.size() - 2]) || (e.kind != "forward" && e.kind != "backward")) return std::nullopt;
    e.call = std::stoll(t[t.size() - 2]);
    e.prefix = t[0];
    e.op = join_dots(t, 1, t.size() - 2);
    return e;
  }
  return std::nullopt;
}

// The module call a construct.json parent names ("Module.layers.0.Linear.forward.1" → "layers.0#1").
std::string module_call(const EntryName& m) {
  return m.module + (m.call > 0 ? "#" + std::to_string(m.call) : "");
}

// Builds the records of one dump.json entry.
class EntryReader {
 public:
  EntryReader(MsprobeDump& dump, const std::string& label) : dump_(dump), label_(label) {}

  void read(const std::string& key, const ojson& value, const EntryName& en, const std::string& call) {
    key_ = key;
    en_ = &en;
    if (!value.is_object()) {
      problem("entry '" + key + "': not a JSON object");
      return;
    }
    if (en.kind == "parameters_grad") {
      for (const auto& [pname, v] : value.items()) {
        index_ = 0;
        walk(v, "backward", "grad", en.module + "/backward/grad/" + pname, key + "." + pname);
      }
      return;
    }
    const std::string& dir = en.kind;
    // Forward: positional args then keyword tensors share one index sequence (the capture's order).
    index_ = 0;
    for (std::string_view k : {"input_args", "input_kwargs", "input"}) {
      if (auto it = value.find(std::string(k)); it != value.end()) {
        walk_role(*it, dir, "input", call, key + ".input", k == "input_kwargs");
      }
    }
    // Parameters before the outputs: the order msprobe's compare lists them in, and the order a forward
    // uses them in.
    if (auto it = value.find("parameters"); it != value.end() && it->is_object()) {
      for (const auto& [pname, v] : it->items()) {
        index_ = 0;
        walk(v, dir, "parameter", en.module + "/" + dir + "/parameter/" + pname, key + ".parameters." + pname);
      }
    }
    index_ = 0;
    if (auto it = value.find("output"); it != value.end()) walk_role(*it, dir, "output", call, key + ".output", false);
  }

 private:
  void problem(const std::string& m) { dump_.problems.push_back(Status::Invalid(label_ + ": " + m)); }

  void walk_role(const ojson& v, const std::string& dir, const std::string& role, const std::string& call,
                 const std::string& ms_base, bool kwargs) {
    if (kwargs && v.is_object() && !is_tensor_entry(v)) {
      for (const auto& [kname, kv] : v.items()) walk_indexed(kv, dir, role, call, ms_base + "." + kname);
      return;
    }
    if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i) walk_indexed(v[i], dir, role, call, ms_base + "." + std::to_string(i));
      return;
    }
    walk_indexed(v, dir, role, call, ms_base + ".0");
  }

  // Depth-first through lists and non-tensor dicts; each tensor takes the next index of its role.
  void walk_indexed(const ojson& v, const std::string& dir, const std::string& role, const std::string& call,
                    const std::string& ms_name) {
    if (is_tensor_entry(v)) {
      add(v, dir, role, call + "/" + dir + "/" + role + "/" + std::to_string(index_), ms_name, index_);
      ++index_;
      return;
    }
    if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i) walk_indexed(v[i], dir, role, call, ms_name + "." + std::to_string(i));
    } else if (v.is_object() && !v.contains("type")) {
      for (const auto& [k, kv] : v.items()) walk_indexed(kv, dir, role, call, ms_name + "." + k);
    }
  }

  // Parameters and parameter gradients: one tensor (or a one-element list of it) per parameter name.
  void walk(const ojson& v, const std::string& dir, const std::string& role, const std::string& name,
            const std::string& ms_name) {
    const ojson* t = &v;
    if (v.is_array() && v.size() == 1) t = &v[0];
    if (is_tensor_entry(*t)) {
      add(*t, dir, role, name, ms_name, -1);
    } else if (!t->is_null() && !(t->is_object() && t->contains("type"))) {
      problem("entry '" + key_ + "': parameter entry '" + ms_name + "' is not a tensor record");
    }
  }

  void add(const ojson& t, const std::string& dir, const std::string& role, const std::string& name,
           const std::string& ms_name, int index) {
    MsprobeTensor r;
    r.name = name;
    r.msprobe_name = ms_name;
    r.module = en_->is_module ? en_->module : parent_module_;
    r.op = en_->op;
    r.direction = dir;
    r.role = role;
    r.index = index;
    const ojson& dt = t["dtype"];
    std::optional<DType> d = dt.is_string() ? dtype_from_name(dt.get_ref<const std::string&>()) : std::nullopt;
    if (!d) {
      problem("tensor '" + ms_name + "': unsupported dtype " + dt.dump());
      return;
    }
    r.dtype = *d;
    const ojson& sh = t["shape"];
    if (!sh.is_array()) {
      problem("tensor '" + ms_name + "': shape is not a list");
      return;
    }
    int64_t numel = 1;
    for (const ojson& x : sh) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0) {
        problem("tensor '" + ms_name + "': shape " + sh.dump() + " holds a non-integer or negative entry");
        return;
      }
      r.shape.push_back(x.get<int64_t>());
      const int64_t d0 = r.shape.back();
      numel = (d0 != 0 && numel > std::numeric_limits<int64_t>::max() / d0) ? -1 : numel * d0;
      if (numel < 0) {
        problem("tensor '" + ms_name + "': element count of shape " + sh.dump() + " overflows int64");
        return;
      }
    }
    if (t.contains("Max") || t.contains("Min") || t.contains("Mean") || t.contains("Norm")) {
      TensorStats s;
      s.max = stat_value(t, "Max");
      s.min = stat_value(t, "Min");
      s.mean = stat_value(t, "Mean");
      s.l2norm = stat_value(t, "Norm");
      s.absmax = std::max(std::fabs(s.max), std::fabs(s.min));
      s.numel = numel;
      r.stats = s;
    }
    if (auto dn = t.find("data_name"); dn != t.end() && dn->is_string() && dn->get_ref<const std::string&>() != "-1") {
      r.data_name = dn->get<std::string>();
    }
    if (auto rg = t.find("requires_grad"); rg != t.end() && rg->is_boolean()) r.requires_grad = rg->get<bool>();
    dump_.tensors.push_back(std::move(r));
  }

 public:
  std::string parent_module_;  // module path of the parent call, for API entries

 private:
  MsprobeDump& dump_;
  const std::string& label_;
  std::string key_;
  const EntryName* en_ = nullptr;
  int index_ = 0;
};

}  // namespace

Result<MsprobeDump> parse_msprobe_dump_json(std::string_view dump_json, std::string_view construct_json,
                                            const std::string& label) {
  // The reader walks an entry's nested argument lists depth-first: a depth limit first (issue 33: a
  // dump.json nested a million deep overflowed the stack).
  if (const std::string deep = json_depth_problem(dump_json); !deep.empty()) return Status::Invalid(label + ": " + deep);
  ojson doc = ojson::parse(python_json_to_json(dump_json), nullptr, false);
  if (doc.is_discarded()) return Status::Invalid(label + ": not valid JSON");
  if (!doc.is_object() || !doc.contains("data") || !doc["data"].is_object()) {
    return Status::Invalid(label + ": not an msprobe dump.json (no \"data\" object)");
  }
  MsprobeDump dump;
  auto str = [&](const char* k) { return doc.contains(k) && doc[k].is_string() ? doc[k].get<std::string>() : ""; };
  dump.task = str("task");
  dump.level = str("level");
  dump.framework = str("framework");
  if (dump.task.empty()) return Status::Invalid(label + ": not an msprobe dump.json (no \"task\")");
  if (dump.task != "tensor" && dump.task != "statistics") {
    return Status::Unsupported(label + ": msprobe task '" + dump.task +
                               "' is not read (tensor and statistics dumps are; overflow_check, free_benchmark "
                               "and structure dumps hold no comparable tensors)");
  }
  // entry → its parent module entry (a hash map: ordered_json's find is a linear scan).
  std::unordered_map<std::string, std::string> parent_of;
  if (!construct_json.empty()) {
    const std::string deep = json_depth_problem(construct_json);
    ojson construct = deep.empty() ? ojson::parse(python_json_to_json(construct_json), nullptr, false) : ojson();
    if (!deep.empty()) {
      dump.problems.push_back(Status::Invalid(label + ": construct.json beside it: " + deep + "; API calls are named under <global>"));
    } else if (construct.is_discarded() || !construct.is_object()) {
      dump.problems.push_back(Status::Invalid(label + ": construct.json beside it is not a JSON object; API calls are named under <global>"));
    } else {
      // msprobe writes each entry's parent module entry, or null at the top.
      size_t odd = 0;
      std::string first_odd;
      for (const auto& [k, v] : construct.items()) {
        if (v.is_string()) parent_of.emplace(k, v.get<std::string>());
        else if (!v.is_null() && odd++ == 0) first_odd = k;
      }
      if (odd > 0)
        dump.problems.push_back(Status::Invalid(label + ": construct.json beside it: " + std::to_string(odd) +
                                                " entries name no parent (neither a string nor null), e.g. '" +
                                                first_odd + "'; their API calls are named under <global>"));
    }
  }
  // parity numbers op calls per (parent call, op): the k of "<parent>/<op>#<k>". A backward entry reuses
  // the parent and k of its forward ("Functional.linear.3" in both).
  std::map<std::pair<std::string, std::string>, int64_t> next_k;
  std::map<std::string, std::pair<std::string, std::string>> call_of;  // "Prefix.api.n" → (parent call, "op#k")
  EntryReader reader(dump, label);
  for (const auto& [key, value] : doc["data"].items()) {
    std::optional<EntryName> en = parse_entry_name(key);
    if (!en) {
      dump.problems.push_back(Status::Invalid(label + ": entry '" + key +
                                              "': name not understood (expected Module.<path>.<Class>.<forward|backward|"
                                              "parameters_grad>.<n> or <Prefix>.<api>.<n>.<forward|backward>)"));
      continue;
    }
    if (en->is_module) {
      reader.parent_module_ = en->module;
      reader.read(key, value, *en, module_call(*en));
      continue;
    }
    const std::string api_call = en->prefix + "." + en->op + "." + std::to_string(en->call);
    auto known = call_of.find(api_call);
    if (known == call_of.end()) {
      std::string parent = "<global>";
      if (auto c = parent_of.find(key); c != parent_of.end()) {
        if (auto pm = parse_entry_name(c->second); pm && pm->is_module) parent = module_call(*pm);
      }
      const int64_t k = next_k[{parent, en->op}]++;
      known = call_of.emplace(api_call, std::make_pair(parent, en->op + "#" + std::to_string(k))).first;
    }
    const std::string& parent = known->second.first;
    reader.parent_module_ = parent == "<global>" ? "" : parent.substr(0, parent.find('#'));
    reader.read(key, value, *en, parent + "/" + known->second.second);
  }
  return dump;
}

namespace {

std::optional<std::string> read_text(const std::filesystem::path& p, Status* err) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    *err = Status::IOError(p.string() + ": cannot open");
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "step12" → 12, "rank3" → 3; proc<pid> and a bare "rank" are rank 0 (msprobe without torch.distributed).
int64_t number_after(const std::string& name, const char* word) {
  const size_t n = std::strlen(word);
  if (name.rfind(word, 0) != 0 || !all_digits(name.substr(n))) return 0;
  return std::stoll(name.substr(n));
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// A cheap look at a dump.json: msprobe writes "task", "level" and then "data" before any tensor.
bool looks_like_msprobe_json(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.find("\"task\"") != std::string::npos && head.find("\"level\"") != std::string::npos &&
         head.find("\"data\"") != std::string::npos;
}

struct Part {
  std::filesystem::path dir;
  int64_t step = 0;
  int rank = 0;
};

std::vector<std::filesystem::path> sorted_subdirs(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The dump.json folders under `root`: root itself (a rank folder), rank*/proc* folders of a step
// folder, or step*/rank* folders of a dump path.
std::vector<Part> find_parts(const std::filesystem::path& root) {
  std::vector<Part> parts;
  std::error_code ec;
  auto rank_of = [](const std::string& n) { return static_cast<int>(number_after(n, "rank")); };
  if (std::filesystem::is_regular_file(root / "dump.json", ec)) {
    const std::string self = root.filename().string();
    const std::string up = root.parent_path().filename().string();
    parts.push_back({root, starts_with(up, "step") ? number_after(up, "step") : 0, rank_of(self)});
    return parts;
  }
  const std::string self = root.filename().string();
  for (const auto& child : sorted_subdirs(root)) {
    const std::string cn = child.filename().string();
    if (std::filesystem::is_regular_file(child / "dump.json", ec) && (starts_with(cn, "rank") || starts_with(cn, "proc"))) {
      parts.push_back({child, starts_with(self, "step") ? number_after(self, "step") : 0, rank_of(cn)});
    } else if (starts_with(cn, "step")) {
      for (const auto& g : sorted_subdirs(child)) {
        if (std::filesystem::is_regular_file(g / "dump.json", ec)) {
          parts.push_back({g, number_after(cn, "step"), rank_of(g.filename().string())});
        }
      }
    }
  }
  return parts;
}

class MsprobeSource final : public RecordSource {
 public:
  explicit MsprobeSource(std::filesystem::path root) : root_(std::move(root)) {}

  std::string describe() const override { return root_.string() + " (msprobe" + detail_ + ")"; }
  const RecordList& records() const override { return records_; }
  const std::vector<Status>& problems() const override { return problems_; }
  void add_problem(Status st) { problems_.push_back(std::move(st)); }
  NativeRecordInfo native_info(const Record& r) const override {
    if (r.handle >= native_.size()) return {};
    return {std::string(native_[r.handle].name), native_[r.handle].requires_grad};
  }

  Result<TensorView> load(const Record& r) const override {
    if (!r.has_data || r.handle >= files_.size() || !files_[r.handle] || files_[r.handle]->records().empty()) {
      return Status::NotFound(r.file + ": no tensor data for '" + r.name + "' in this msprobe dump");
    }
    const RecordSource& f = *files_[r.handle];
    return f.load(f.records()[0]);
  }

  Status read_part(const Part& part) {
    const std::filesystem::path json_path = part.dir / "dump.json";
    Status err;
    std::optional<std::string> text = read_text(json_path, &err);
    if (!text) return err;
    std::string construct;
    std::error_code ec;
    if (std::filesystem::is_regular_file(part.dir / "construct.json", ec)) {
      if (auto c = read_text(part.dir / "construct.json", &err)) construct = std::move(*c);
    }
    PARITY_ASSIGN_OR_RETURN(MsprobeDump dump, parse_msprobe_dump_json(*text, construct, json_path.string()));
    for (Status& st : dump.problems) problems_.push_back(std::move(st));
    if (tasks_.insert(dump.task + " " + dump.level).second) {
      detail_ += (detail_.empty() ? ", " : "; ") + dump.task + " " + dump.level;
    }
    const std::filesystem::path data_dir = part.dir / "dump_tensor_data";
    std::set<std::string> referenced;
    int64_t order = 0;
    for (MsprobeTensor& t : dump.tensors) {
      Record r;
      r.name = t.name;
      r.file = json_path.string();
      r.dtype = t.dtype;
      r.shape = t.shape;
      r.module = t.module;
      r.op = t.op;
      r.direction = t.direction;
      r.role = t.role;
      r.index = t.index;
      r.step = part.step;
      r.rank = part.rank;
      r.order = order++;
      r.stats = t.stats;
      // One slot per record: the handle finds its file (null without one) and its msprobe identity.
      r.handle = files_.size();
      files_.emplace_back();
      native_.push_back({InternedString(t.msprobe_name), t.requires_grad});
      if (!t.data_name.empty()) {
        referenced.insert(t.data_name);
        attach_file(r, t, data_dir);
      }
      records_.push_back(std::move(r));
    }
    name_unreferenced(data_dir, referenced);
    return Status::OK();
  }

 private:
  // Opens the tensor file of a record (.pt with the restricted reader, .npy) and checks it against
  // dump.json; any failure is a problem naming the file, and the record keeps only its statistics.
  void attach_file(Record& r, const MsprobeTensor& t, const std::filesystem::path& data_dir) {
    if (t.data_name.find('/') != std::string::npos || t.data_name.find('\\') != std::string::npos ||
        t.data_name == "." || t.data_name == "..") {
      problems_.push_back(Status::Invalid(r.file + ": tensor '" + t.msprobe_name + "': data_name '" + t.data_name +
                                          "' is not a plain file name; not read"));
      return;
    }
    const std::filesystem::path p = data_dir / t.data_name;
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) {
      problems_.push_back(Status::NotFound(p.string() + ": listed in dump.json for '" + t.msprobe_name +
                                           "' but missing; compared by its statistics only"));
      return;
    }
    Result<std::unique_ptr<RecordSource>> src = Status::Unsupported("");
    if (has_extension(p, ".pt")) {
      src = open_torch_pt(p);
    } else if (has_extension(p, ".npy")) {
      src = npy_format_spec().open(p);
    } else {
      src = Status::Unsupported(p.string() + ": tensor file type not read (msprobe writes .pt and .npy)");
    }
    if (!src.ok()) {
      problems_.push_back(src.status());
      return;
    }
    const Record& fr = (*src)->records().at(0);
    if (fr.dtype != r.dtype || fr.shape != r.shape) {
      problems_.push_back(Status::Invalid(p.string() + ": holds " + shape_to_string(fr.shape) + " " +
                                          dtype_name(fr.dtype) + ", dump.json says " + shape_to_string(r.shape) +
                                          " " + dtype_name(r.dtype) + "; not compared by data"));
      return;
    }
    r.file = p.string();
    r.has_data = true;
    files_[r.handle] = std::move(*src);
  }

  // A tensor file no dump.json entry names would be silently ignored: it is named instead.
  void name_unreferenced(const std::filesystem::path& data_dir, const std::set<std::string>& referenced) {
    std::error_code ec;
    if (!std::filesystem::is_directory(data_dir, ec)) return;
    std::vector<std::string> extra;
    for (const auto& e : std::filesystem::directory_iterator(data_dir, ec)) {
      const std::string n = e.path().filename().string();
      if (!referenced.count(n)) extra.push_back(n);
    }
    std::sort(extra.begin(), extra.end());
    for (const std::string& n : extra) {
      problems_.push_back(Status::Invalid((data_dir / n).string() + ": not listed in dump.json; not compared"));
    }
  }

  std::filesystem::path root_;
  std::string detail_;
  std::set<std::string> tasks_;
  RecordList records_;
  std::vector<Status> problems_;
  std::vector<std::unique_ptr<RecordSource>> files_;  // files_[record.handle]: its tensor file, or null
  struct Native {
    InternedString name;  // msprobe's name of the record
    std::optional<bool> requires_grad;
  };
  std::vector<Native> native_;  // native_[record.handle]
};

bool probe_msprobe(const std::filesystem::path& p) { return is_msprobe_dump(p); }

Result<std::unique_ptr<RecordSource>> open_msprobe(const std::filesystem::path& p) {
  const std::vector<Part> parts = find_parts(p);
  if (parts.empty()) {
    return Status::NotFound(p.string() + ": no msprobe dump.json here, in rank*/proc* folders or in step*/rank* folders");
  }
  auto src = std::make_unique<MsprobeSource>(p);
  for (const Part& part : parts) {
    Status st = src->read_part(part);
    if (!st.ok()) {
      if (parts.size() == 1) return st;
      // One unreadable rank never stops the others; it is named and the run cannot pass.
      src->add_problem(std::move(st));
    }
  }
  return std::unique_ptr<RecordSource>(std::move(src));
}

}  // namespace

bool is_msprobe_dump(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return false;
  for (const Part& part : find_parts(dir)) {
    if (looks_like_msprobe_json(part.dir / "dump.json")) return true;
  }
  return false;
}

const FormatSpec& msprobe_format_spec() {
  static const FormatSpec spec{"msprobe", &probe_msprobe, &open_msprobe, true, false};
  return spec;
}

}  // namespace parity::formats
