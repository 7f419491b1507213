// The layout file (parity/layout.h, docs/layout.md): JSON, schema parity.layout/1.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "parity/layout.h"
#include "parity/schemas.h"
#include "sources/json_file.h"

namespace parity::layout {
namespace {

using nlohmann::json;

Result<Split> parse_split(const std::string& s) {
  for (Split k : {Split::kNone, Split::kColumn, Split::kRow, Split::kVocab, Split::kSequence})
    if (s == split_name(k)) return k;
  return Status::Invalid("split \"" + s + "\" is not one of none, column, row, vocab, sequence");
}

// A positive integer member (default when absent).
Result<int> positive(const json& j, const char* key, int dflt) {
  const auto it = j.find(key);
  if (it == j.end()) return dflt;
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > (1 << 20))
    return Status::Invalid(fmt::format("\"{}\" must be an integer from 1 to 1048576", key));
  return static_cast<int>(it->get<int64_t>());
}

Result<SplitRule> parse_rule(const json& j, int index) {
  if (!j.is_object()) return Status::Invalid(fmt::format("splits[{}] is not an object", index));
  SplitRule rule;
  rule.line = index;
  const auto modules = j.find("modules"), split = j.find("split");
  if (modules == j.end() || !modules->is_string() || split == j.end() || !split->is_string())
    return Status::Invalid(fmt::format("splits[{}] needs \"modules\" (a regular expression) and \"split\"", index));
  auto re = NamePattern::compile(modules->get<std::string>());
  if (!re.ok()) return Status::Invalid(fmt::format("splits[{}]: {}", index, re.status().message()));
  rule.modules = std::move(*re);
  auto kind = parse_split(split->get<std::string>());
  if (!kind.ok()) return Status::Invalid(fmt::format("splits[{}]: {}", index, kind.status().message()));
  rule.split = *kind;
  if (const auto d = j.find("dim"); d != j.end()) {
    if (!d->is_number_integer() || d->get<int64_t>() < -64 || d->get<int64_t>() > 63)
      return Status::Invalid(fmt::format("splits[{}]: \"dim\" must be an integer from -64 to 63", index));
    rule.dim = static_cast<int>(d->get<int64_t>());
  }
  if (const auto p = j.find("partial"); p != j.end()) {
    if (!p->is_boolean()) return Status::Invalid(fmt::format("splits[{}]: \"partial\" must be true or false", index));
    rule.partial = p->get<bool>();
  }
  return rule;
}

Result<std::vector<std::string>> parse_order(const json& j) {
  std::vector<std::string> order;
  const std::string text = j.get<std::string>();
  for (size_t at = 0; at <= text.size();) {
    const size_t dash = std::min(text.find('-', at), text.size());
    order.push_back(text.substr(at, dash - at));
    at = dash + 1;
  }
  std::vector<std::string> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != std::vector<std::string>{"dp", "pp", "tp"})
    return Status::Invalid("\"order\" \"" + text + "\" must name tp, dp and pp once each (\"tp-dp-pp\")");
  return order;
}

Result<SideLayout> parse_side(const json& j, const char* name) {
  SideLayout side;
  if (j.is_null()) return side;
  if (!j.is_object()) return Status::Invalid(std::string("\"") + name + "\" is not an object");
  auto in_side = [&](const Status& s) { return Status::Invalid(std::string(name) + ": " + s.message()); };
  for (auto [key, out] : {std::pair{"tp", &side.tp}, std::pair{"pp", &side.pp}, std::pair{"dp", &side.dp}}) {
    auto v = positive(j, key, 1);
    if (!v.ok()) return in_side(v.status());
    *out = *v;
  }
  auto layers = positive(j, "num_layers", 1);
  if (!layers.ok()) return in_side(layers.status());
  side.num_layers = j.contains("num_layers") ? *layers : 0;
  if (const auto o = j.find("order"); o != j.end()) {
    if (!o->is_string()) return in_side(Status::Invalid("\"order\" is not a string"));
    auto order = parse_order(*o);
    if (!order.ok()) return in_side(order.status());
    side.order = std::move(*order);
  }
  if (const auto s = j.find("stage_layers"); s != j.end()) {
    if (!s->is_array() || static_cast<int>(s->size()) != side.pp)
      return in_side(Status::Invalid(fmt::format("\"stage_layers\" must list the layers of each of the {} PP stages", side.pp)));
    for (const json& n : *s) {
      if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() > (1 << 20))
        return in_side(Status::Invalid("\"stage_layers\" holds a value that is not a count of layers"));
      side.stage_layers.push_back(static_cast<int>(n.get<int64_t>()));
    }
  } else if (const std::string why = side.layers_problem(); !why.empty()) {
    return in_side(Status::Invalid(why));
  }
  for (const char* key : {"tp", "pp", "dp", "order", "num_layers", "stage_layers"})
    if (j.contains(key)) side.stated.emplace_back(key);
  return side;
}

Status parse_layout(const json& j, Layout& out) {
  const auto schema = j.find("schema");
  if (schema == j.end() || *schema != schemas::kLayout.id)
    return Status::Invalid(std::string("\"schema\" must be \"") + schemas::kLayout.id + "\"");
  if (const auto l = j.find("layers"); l != j.end()) {
    if (!l->is_string() || l->get<std::string>().empty()) return Status::Invalid("\"layers\" must be a module list's name");
    out.layers = l->get<std::string>();
  }
  if (const auto s = j.find("splits"); s != j.end()) {
    if (!s->is_array()) return Status::Invalid("\"splits\" is not a list");
    for (size_t i = 0; i < s->size(); ++i) {
      PARITY_ASSIGN_OR_RETURN(SplitRule rule, parse_rule((*s)[i], static_cast<int>(i)));
      out.splits.push_back(std::move(rule));
    }
  }
  PARITY_ASSIGN_OR_RETURN(out.golden, parse_side(j.value("golden", json()), "golden"));
  PARITY_ASSIGN_OR_RETURN(out.target, parse_side(j.value("target", json()), "target"));
  return Status::OK();
}

}  // namespace

const char* split_name(Split s) {
  switch (s) {
    case Split::kNone: return "none";
    case Split::kColumn: return "column";
    case Split::kRow: return "row";
    case Split::kVocab: return "vocab";
    case Split::kSequence: return "sequence";
  }
  return "none";
}

bool SideLayout::states(std::string_view key) const {
  return std::find(stated.begin(), stated.end(), key) != stated.end();
}

std::string SideLayout::layers_problem() const {
  if (pp == 1 || !stage_layers.empty() || (num_layers > 0 && num_layers % pp == 0)) return "";
  return fmt::format("{} PP stages need \"stage_layers\" or a \"num_layers\" divisible by {}", pp, pp);
}

const SplitRule* Layout::rule_for(std::string_view module) const {
  for (const SplitRule& r : splits)
    if (r.modules.search(module)) return &r;
  return nullptr;
}

Result<Layout> read_layout(const std::filesystem::path& file) {
  PARITY_ASSIGN_OR_RETURN(json j, sources::read_json_object(file));
  Layout out;
  out.file = file.string();
  if (Status s = parse_layout(j, out); !s.ok()) return Status::Invalid(file.string() + ": " + s.message());
  return out;
}

Result<RankCoords> coords_of(int rank, const SideLayout& side) {
  const int64_t world = int64_t{side.tp} * side.pp * side.dp;
  if (rank < 0 || rank >= world)
    return Status::Invalid(fmt::format("rank {} is outside the layout's {} ranks (tp {} × pp {} × dp {})", rank, world,
                                       side.tp, side.pp, side.dp));
  RankCoords c;
  int rest = rank;
  for (const std::string& dim : side.order) {
    const int size = dim == "tp" ? side.tp : dim == "pp" ? side.pp : side.dp;
    (dim == "tp" ? c.tp : dim == "pp" ? c.pp : c.dp) = rest % size;
    rest /= size;
  }
  return c;
}

int layer_offset(const SideLayout& side, int pp_rank) {
  int offset = 0;
  for (int s = 0; s < pp_rank; ++s)
    offset += side.stage_layers.empty() ? side.num_layers / side.pp : side.stage_layers[static_cast<size_t>(s)];
  return offset;
}

std::string global_layer_path(std::string_view path, const std::string& layers, int offset) {
  if (offset == 0) return std::string(path);
  // The first "<layers>.<n>" that is a whole path component run: preceded by the start or a '.', '/',
  // followed by the end or a '.', '/', '#'.
  for (size_t at = path.find(layers); at != std::string_view::npos; at = path.find(layers, at + 1)) {
    const size_t dot = at + layers.size();
    if ((at > 0 && path[at - 1] != '.' && path[at - 1] != '/') || dot >= path.size() || path[dot] != '.') continue;
    size_t end = dot + 1;
    while (end < path.size() && path[end] >= '0' && path[end] <= '9') ++end;
    if (end == dot + 1 || end - dot > 9 || (end < path.size() && path[end] != '.' && path[end] != '/' && path[end] != '#'))
      continue;
    const int n = std::stoi(std::string(path.substr(dot + 1, end - dot - 1)));
    return std::string(path.substr(0, dot + 1)) + std::to_string(n + offset) + std::string(path.substr(end));
  }
  return std::string(path);
}

}  // namespace parity::layout
