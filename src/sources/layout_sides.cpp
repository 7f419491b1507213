// Each side's layout for `parity compare` (parity/layout.h, docs/layout.md "Recorded by the capture"): what
// its capture recorded in each rank's fingerprint ("parallel": sizes, this rank's coordinates, the split of
// each parameter), combined with what a layout file states, and the sides read through merge_shards.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "parity/dump.h"
#include "parity/layout.h"

namespace parity::layout {
namespace {

using nlohmann::json;

constexpr std::array<const char*, 3> kDims = {"tp", "pp", "dp"};

int& size_of(SideLayout& s, std::string_view dim) { return dim == "tp" ? s.tp : dim == "pp" ? s.pp : s.dp; }
int size_of(const SideLayout& s, std::string_view dim) { return dim == "tp" ? s.tp : dim == "pp" ? s.pp : s.dp; }

// A non-negative integer member of `j`, or `dflt` when absent or of another type.
int int_member(const json& j, const char* key, int dflt) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() <= (1 << 20)
             ? static_cast<int>(it->get<int64_t>()) : dflt;
}

// "tp-dp-pp" -> {"tp", "dp", "pp"} (checked by the caller).
std::vector<std::string> split_order(const std::string& text) {
  std::vector<std::string> order;
  for (size_t at = 0, dash; at <= text.size(); at = dash + 1) {
    dash = std::min(text.find('-', at), text.size());
    order.push_back(text.substr(at, dash - at));
  }
  return order;
}

std::string order_text(const std::vector<std::string>& order) {
  return fmt::format("{}", fmt::join(order, "-"));
}

// The rank orders Megatron-LM can build over tp, dp and pp, its default first.
std::vector<std::vector<std::string>> all_orders() {
  std::vector<std::string> o = {"dp", "pp", "tp"};
  std::vector<std::vector<std::string>> out = {{"tp", "dp", "pp"}};
  do {
    if (o != out[0]) out.push_back(o);
  } while (std::next_permutation(o.begin(), o.end()));
  return out;
}

// One rank's "parallel" object, read into the side it describes (sizes, order, layers); `coords` its own.
struct RankParallel {
  int rank = 0;
  json j;
  RankCoords coords;
  bool has_coords = false;
};

// Megatron's attributes, or a DTensor's Shard(d) on the TP mesh dimension (named "tp", or the only dimension
// of a mesh as large as the TP group).
std::optional<ParamSplit> param_split(const json& p, int tp) {
  if (!p.is_object()) return std::nullopt;
  ParamSplit s;
  if (p.value("tensor_model_parallel", false)) {
    s.partition_dim = int_member(p, "partition_dim", -1);
    s.partition_stride = std::max(1, int_member(p, "partition_stride", 1));
  }
  s.sequence_parallel = p.value("sequence_parallel", false);
  const auto d = p.find("dtensor");
  if (d != p.end() && d->is_object() && d->value("placements", json()).is_array()) {
    const json& placements = (*d)["placements"];
    const json names = d->value("mesh_dim_names", json::array()), shape = d->value("mesh_shape", json::array());
    for (size_t i = 0; i < placements.size(); ++i) {
      const std::string text = placements[i].is_string() ? placements[i].get<std::string>() : "";
      const bool tp_dim = (i < names.size() && names[i] == "tp") ||
                          (names.empty() && shape.size() == 1 && shape[0].is_number_integer() && shape[0] == tp && tp > 1);
      if (tp_dim && text.rfind("Shard(", 0) == 0) s.partition_dim = std::atoi(text.c_str() + 6);
    }
  }
  if (s.partition_dim < 0 && !s.sequence_parallel) return std::nullopt;
  return s;
}

// The side of the lowest rank that records one: sizes stated only when Megatron or the capture's `layout=`
// said them (torch.distributed alone gives a guess: every rank a data-parallel replica).
Result<SideLayout> reference_side(const RankParallel& first, const std::string& run) {
  SideLayout side;
  const json& j = first.j;
  for (const char* dim : kDims) size_of(side, dim) = std::max(1, int_member(j, dim, 1));
  if (int_member(j, "cp", 1) > 1)
    return Status::Unsupported(fmt::format("{}: rank {} records context parallel {}, which the layout does not merge yet",
                                           run, first.rank, int_member(j, "cp", 1)));
  const std::string source = j.value("source", "");
  if (source == "megatron" || source == "argument") side.stated = {"tp", "pp", "dp"};
  if (const auto o = j.find("order"); o != j.end() && o->is_string()) {
    std::vector<std::string> order = split_order(o->get<std::string>());
    std::vector<std::string> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != std::vector<std::string>{"dp", "pp", "tp"})
      return Status::Invalid(fmt::format("{}: rank {} records the order \"{}\", not one of tp, dp and pp each once", run,
                                         first.rank, o->get<std::string>()));
    side.order = std::move(order);
    if (!side.stated.empty()) side.stated.push_back("order");
  }
  side.num_layers = int_member(j, "num_layers", 0);
  if (side.num_layers > 0) side.stated.push_back("num_layers");
  if (const auto s = j.find("stage_layers"); s != j.end() && s->is_array()) {
    for (const json& n : *s) side.stage_layers.push_back(n.is_number_integer() ? n.get<int>() : 0);
    side.stated.push_back("stage_layers");
  }
  return side;
}

// Every rank's sizes equal the reference's, and its coordinates are where the order puts it. Without an
// order from the capture (Megatron's parallel_state has no getter for it), the first order that fits every
// rank's coordinates (Megatron's "tp-dp-pp" when several do).
Status check_ranks(SideLayout& side, const std::vector<RankParallel>& ranks, const std::string& run) {
  for (const RankParallel& r : ranks)
    for (const char* dim : kDims)
      if (std::max(1, int_member(r.j, dim, 1)) != size_of(side, dim))
        return Status::Invalid(fmt::format("{}: rank {} records {} {}, rank {} {} {}: the ranks disagree on the layout", run,
                                           r.rank, dim, int_member(r.j, dim, 1), ranks[0].rank, dim, size_of(side, dim)));
  auto fits = [&](const SideLayout& s, std::string* why) {
    for (const RankParallel& r : ranks) {
      if (!r.has_coords) continue;
      Result<RankCoords> c = coords_of(r.rank, s);
      if (c.ok() && c->tp == r.coords.tp && c->pp == r.coords.pp && c->dp == r.coords.dp) continue;
      if (why != nullptr)
        *why = fmt::format("rank {} records tp {}, pp {}, dp {}; {}", r.rank, r.coords.tp, r.coords.pp, r.coords.dp,
                           c.ok() ? fmt::format("the order {} puts it at tp {}, pp {}, dp {}", order_text(s.order), c->tp, c->pp, c->dp)
                                  : c.status().message());
      return false;
    }
    return true;
  };
  std::string why;
  if (side.states("order") || side.stated.empty()) {
    if (!side.stated.empty() && !fits(side, &why)) return Status::Invalid(fmt::format("{}: {}", run, why));
    return Status::OK();
  }
  for (const std::vector<std::string>& order : all_orders()) {
    SideLayout trial = side;
    trial.order = order;
    if (fits(trial, order == all_orders()[0] ? &why : nullptr)) {
      side.order = order;
      return Status::OK();
    }
  }
  return Status::Invalid(fmt::format("{}: the recorded coordinates fit no rank order of tp, dp and pp ({})", run, why));
}

}  // namespace

Result<std::optional<SideLayout>> recorded_layout(const std::map<int, std::string>& fingerprints, const std::string& run) {
  std::vector<RankParallel> ranks;
  for (const auto& [rank, text] : fingerprints) {
    if (text.find("\"parallel\"") == std::string::npos) continue;  // captures before the layout was recorded
    const json fp = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (fp.is_discarded() || !fp.is_object() || !fp.contains("parallel") || !fp["parallel"].is_object()) continue;
    RankParallel r{rank, fp["parallel"], {}, false};
    if (const auto c = r.j.find("coords"); c != r.j.end() && c->is_object()) {
      r.coords = {int_member(*c, "tp", 0), int_member(*c, "pp", 0), int_member(*c, "dp", 0)};
      r.has_coords = true;
    }
    ranks.push_back(std::move(r));
  }
  if (ranks.empty()) return std::optional<SideLayout>();
  PARITY_ASSIGN_OR_RETURN(SideLayout side, reference_side(ranks[0], run));
  PARITY_RETURN_NOT_OK(check_ranks(side, ranks, run));
  for (const RankParallel& r : ranks) {
    const json params = r.j.value("params", json::object());
    if (!params.is_object()) continue;
    for (auto it = params.begin(); it != params.end(); ++it)
      if (auto s = param_split(it.value(), side.tp); s && !side.params.count(it.key())) side.params.emplace(it.key(), *s);
  }
  return std::optional<SideLayout>(std::move(side));
}

Result<SideLayout> combine_sides(const SideLayout& file_side, const std::optional<SideLayout>& recorded,
                                 const std::string& file, const std::string& side_name, const std::string& run) {
  if (!recorded) return file_side;
  SideLayout out = file_side;
  for (const char* dim : kDims) {
    if (!recorded->states(dim)) continue;
    if (file_side.states(dim) && size_of(file_side, dim) != size_of(*recorded, dim))
      return Status::Invalid(fmt::format("{}: {}.{} is {}, but the {}'s capture ({}) recorded {} {}", file, side_name, dim,
                                         size_of(file_side, dim), side_name, run, dim, size_of(*recorded, dim)));
    size_of(out, dim) = size_of(*recorded, dim);
  }
  if (recorded->states("order") || !file_side.states("order")) {
    if (file_side.states("order") && file_side.order != recorded->order)
      return Status::Invalid(fmt::format("{}: {}.order is \"{}\", but the {}'s capture ({}) recorded \"{}\"", file, side_name,
                                         order_text(file_side.order), side_name, run, order_text(recorded->order)));
    out.order = recorded->order;
  }
  if (!file_side.states("num_layers") && !file_side.states("stage_layers")) {
    out.num_layers = recorded->num_layers;
    out.stage_layers = recorded->stage_layers;
  }
  out.params = recorded->params;
  for (const std::string& key : recorded->stated)
    if (!out.states(key)) out.stated.push_back(key);
  if (!out.stage_layers.empty() && static_cast<int>(out.stage_layers.size()) != out.pp)
    return Status::Invalid(fmt::format("{}: \"stage_layers\" lists {} stages, the {} has {}", side_name, out.stage_layers.size(),
                                       side_name, out.pp));
  if (const std::string why = out.layers_problem(); !why.empty())
    return Status::Invalid(fmt::format("{}: the {}'s capture ({}) records PP {}, and {}: give them in a layout file's \"{}\" "
                                       "(--layout, docs/layout.md)", side_name, side_name, run, out.pp, why, side_name));
  return out;
}

namespace {

// What the capture of a source recorded: only parity's own runs record a layout.
Result<std::optional<SideLayout>> recorded_of(const RecordSource& source) {
  const auto* run = dynamic_cast<const dump::RunReader*>(&source);
  if (run == nullptr) return std::optional<SideLayout>();
  return recorded_layout(run->fingerprints(), run->describe());
}

std::string side_text(const std::optional<SideLayout>& s) {
  if (!s) return "not recorded";
  return fmt::format("tp {}, pp {}, dp {}", s->tp, s->pp, s->dp);
}

// The sizes and order the lowest rank records, read leniently (nothing checked across ranks): whether two
// captures are laid out alike does not depend on what merging them would need.
SideLayout first_rank_sizes(const RecordSource& source) {
  SideLayout side;
  const auto* run = dynamic_cast<const dump::RunReader*>(&source);
  if (run == nullptr) return side;
  for (const auto& [rank, text] : run->fingerprints()) {
    if (text.find("\"parallel\"") == std::string::npos) continue;
    const json fp = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (fp.is_discarded() || !fp.is_object() || !fp.contains("parallel") || !fp["parallel"].is_object()) continue;
    for (const char* dim : kDims) size_of(side, dim) = std::max(1, int_member(fp["parallel"], dim, 1));
    if (const json& o = fp["parallel"]; o.contains("order") && o["order"].is_string()) side.order = split_order(o["order"]);
    return side;
  }
  return side;
}

// Two captures laid out alike compare rank by rank, as they always did; layouts that differ, one of them
// sharded, are merged.
bool layouts_differ(const std::optional<SideLayout>& golden, const std::optional<SideLayout>& target) {
  const SideLayout g = golden.value_or(SideLayout{}), t = target.value_or(SideLayout{});
  if (!g.sharded() && !t.sharded()) return false;
  return std::tie(g.tp, g.pp, g.dp, g.order) != std::tie(t.tp, t.pp, t.dp, t.order);
}

}  // namespace

Status apply_layout(const std::string& layout_file, DividedSources& sources) {
  if (sources.sources.size() != 2) return Status::OK();
  // Dividing a run among processes by rank would part a layer's TP shards, which merge in one process.
  if (!layout_file.empty() && sources.shares)
    return Status::Unsupported("--layout: comparing runs laid out differently under mpirun is not supported yet");
  // Without a file, two captures laid out alike compare rank by rank whatever else their layouts record
  // (context parallel, coordinates only a merge would need): the lowest ranks' sizes decide.
  if (layout_file.empty() && !layouts_differ(first_rank_sizes(*sources.sources[0]), first_rank_sizes(*sources.sources[1])))
    return Status::OK();
  PARITY_ASSIGN_OR_RETURN(std::optional<SideLayout> golden, recorded_of(*sources.sources[0]));
  PARITY_ASSIGN_OR_RETURN(std::optional<SideLayout> target, recorded_of(*sources.sources[1]));
  if (sources.shares)
    return Status::Unsupported(fmt::format("the captures record different parallel layouts (golden: {}; target: {}); comparing "
                                           "them under mpirun is not supported yet", side_text(golden), side_text(target)));
  Layout layout;
  if (!layout_file.empty()) {
    PARITY_ASSIGN_OR_RETURN(layout, read_layout(layout_file));
  } else {
    layout.file = "the layouts the captures recorded";
  }
  PARITY_ASSIGN_OR_RETURN(layout.golden, combine_sides(layout.golden, golden, layout.file, "golden", sources.sources[0]->describe()));
  PARITY_ASSIGN_OR_RETURN(layout.target, combine_sides(layout.target, target, layout.file, "target", sources.sources[1]->describe()));
  if (layout.golden.sharded()) sources.sources[0] = merge_shards(std::move(sources.sources[0]), layout, layout.golden);
  if (layout.target.sharded()) sources.sources[1] = merge_shards(std::move(sources.sources[1]), layout, layout.target);
  return Status::OK();
}

}  // namespace parity::layout
