// A sharded run read as one unsharded run (parity/layout.h `merge_shards`, docs/layout.md): the records of
// every TP rank of a DP rank that are the same logical tensor form a group; the group is one record whose
// tensor is the shards combined by the record's plan (concatenated, summed, or one replica of identical
// copies). PP stages' layer numbers become global. A group that does not fit together is kept as its
// shards, under their own names and ranks, with a problem: nothing captured is dropped, and the run
// cannot pass.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "parity/dtype.h"
#include "parity/layout.h"
#include "sources/layout_stages.h"

namespace parity::layout {
namespace {

struct Shard {
  int tp = 0;
  size_t record = 0;  // index into the inner source's records
  int pp = 0;
};

struct Group {
  ShardPlan plan;
  std::vector<Shard> shards;  // by TP rank once complete
  bool merged = false;        // false: a shard kept as it is (the group did not fit, or nothing to merge)
};

// Phase of a record in a step's execution, for the order of a run laid out over PP stages: all stages'
// forward (stage 0 first), then the backward (last stage first), then the optimizer.
int64_t phase_rank(const Record& r, const RankCoords& c, int pp) {
  const std::string_view dir = r.direction;
  if (dir == "backward") return pp + (pp - 1 - c.pp);
  if (dir == "optimizer") return 2 * int64_t{pp} + c.pp;
  return c.pp;
}

// Statistics of the concatenation of shards (statistics-mode dumps): exact for every field but the
// subnormal count's dtype, which all shards share.
std::optional<TensorStats> concat_stats(const std::vector<const Record*>& shards) {
  TensorStats out;
  double mean_sum = 0, sq = 0;
  bool first = true;
  for (const Record* r : shards) {
    if (!r->stats) return std::nullopt;
    const TensorStats& s = *r->stats;
    out.min = first ? s.min : std::min(out.min, s.min);
    out.max = first ? s.max : std::max(out.max, s.max);
    out.absmax = first ? s.absmax : std::max(out.absmax, s.absmax);
    first = false;
    mean_sum += s.mean * static_cast<double>(s.numel - s.nan_count - s.inf_count);
    sq += s.l2norm * s.l2norm;
    out.numel += s.numel;
    out.nan_count += s.nan_count;
    out.inf_count += s.inf_count;
    out.zero_count += s.zero_count;
    out.subnormal_count += s.subnormal_count;
  }
  const int64_t finite = out.numel - out.nan_count - out.inf_count;
  out.mean = finite > 0 ? mean_sum / static_cast<double>(finite) : 0.0;
  out.l2norm = std::sqrt(sq);
  return out;
}

// Buffers of merged tensors, reused: a fresh allocation of a large tensor is new pages that the kernel
// zero-fills and faults in one by one, a pass over the tensor before the merge writes it. A buffer comes
// back when the last view of its tensor is dropped; at most kKept wait, the largest ones.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  std::shared_ptr<std::byte[]> get(size_t bytes) {
    std::unique_ptr<std::byte[]> buf;
    size_t cap = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < free_.size(); ++i)
        if (free_[i].second >= bytes) {
          buf = std::move(free_[i].first), cap = free_[i].second;
          free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
    }
    if (!buf) buf.reset(new std::byte[bytes]), cap = bytes;  // not zero-filled: a merge writes every byte
    std::weak_ptr<BufferPool> pool = weak_from_this();
    return std::shared_ptr<std::byte[]>(buf.release(), [pool, cap](std::byte* p) {
      if (auto keep = pool.lock()) keep->put(std::unique_ptr<std::byte[]>(p), cap);
      else delete[] p;
    });
  }

 private:
  static constexpr size_t kKept = 2;
  void put(std::unique_ptr<std::byte[]> buf, size_t cap) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.emplace_back(std::move(buf), cap);
    std::sort(free_.begin(), free_.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (free_.size() > kKept) free_.resize(kKept);
  }
  std::mutex mu_;
  std::vector<std::pair<std::unique_ptr<std::byte[]>, size_t>> free_;
};

class LayoutSource final : public RecordSource {
 public:
  LayoutSource(std::unique_ptr<RecordSource> inner, const Layout& layout, const SideLayout& side)
      : inner_(std::move(inner)), layout_(layout), side_(side), problems_(inner_->problems()) {
    group_records();
    build_records();
  }

  std::string describe() const override {
    return fmt::format("{} (merged: tp {}, pp {}, dp {}; {})", inner_->describe(), side_.tp, side_.pp, side_.dp, layout_.file);
  }
  const RecordList& records() const override { return records_; }
  const std::vector<Status>& problems() const override { return problems_; }
  Result<TensorView> load(const Record& r) const override;
  std::optional<std::string> fingerprint_json() const override { return inner_->fingerprint_json(); }
  std::string op_arguments_json(const Record& r) const override { return inner_->op_arguments_json(first_shard(r)); }
  NativeRecordInfo native_info(const Record& r) const override { return inner_->native_info(first_shard(r)); }
  std::vector<RecordShard> shards(const Record& r) const override;

 private:
  const Record& first_shard(const Record& r) const { return inner_->records()[groups_[r.handle].shards[0].record]; }
  void group_records();
  void check_group(Group& g, const std::string& name);
  void keep_stage_representatives();
  void keep_shards_apart(size_t group);
  void build_records();
  Record logical_record(const Group& g, size_t index) const;
  Result<TensorView> load_replicated(const Record& r, const Group& g) const;
  Result<TensorView> load_concat(const Record& r, const Group& g) const;
  Result<TensorView> load_sum(const Record& r, const Group& g) const;
  // What the capture recorded of the split of a parameter-like record's parameter, or nullptr.
  const ParamSplit* recorded_split(const Record& r) const {
    if (side_.params.empty()) return nullptr;
    const auto it = side_.params.find(parameter_path(r));
    return it == side_.params.end() ? nullptr : &it->second;
  }

  std::unique_ptr<RecordSource> inner_;
  Layout layout_;
  SideLayout side_;
  std::vector<Status> problems_;
  std::vector<Group> groups_;
  std::vector<std::string> names_, modules_;  // per group: the logical name and module
  std::vector<RankCoords> coords_;            // per group: its first shard's coordinates
  RecordList records_;
  std::shared_ptr<BufferPool> buffers_ = std::make_shared<BufferPool>();
};

void LayoutSource::group_records() {
  const RecordList& in = inner_->records();
  std::map<std::tuple<std::string, int64_t, int>, size_t> by_key;  // (logical name, step, dp) -> group
  for (size_t i = 0; i < in.size(); ++i) {
    const Record& r = in[i];
    Result<RankCoords> c = r.rank < 0 ? RankCoords{} : coords_of(r.rank, side_);
    if (!c.ok()) problems_.push_back(Status::Invalid(fmt::format("{}: {}: {}", r.file.view(), r.name.view(), c.status().message())));
    const RankCoords coords = c.ok() ? *c : RankCoords{0, 0, r.rank};
    const int offset = c.ok() ? layer_offset(side_, coords.pp) : 0;
    std::string name = global_layer_path(r.name, layout_.layers, offset);
    const auto key = std::make_tuple(name, r.step, c.ok() && r.rank >= 0 ? coords.dp : r.rank);
    auto [it, fresh] = by_key.emplace(key, groups_.size());
    if (fresh) {
      groups_.push_back({shard_plan(r, layout_.rule_for(r.module), recorded_split(r)), {}, true});
      names_.push_back(std::move(name));
      modules_.push_back(global_layer_path(r.module, layout_.layers, offset));
      coords_.push_back(coords);
    }
    groups_[it->second].shards.push_back({c.ok() ? coords.tp : 0, i, coords.pp});
  }
  if (side_.pp > 1) keep_stage_representatives();
  for (size_t g = 0; g < groups_.size(); ++g)
    if (!groups_[g].shards.empty()) check_group(groups_[g], names_[g]);
}

// Records of a module several PP stages hold (layout_stages.h: a stage's root, a module around its
// layers): the stage that stands for the model's keeps them in their groups; the other copies are stage
// boundaries, checked against their neighbouring stage's records. A group left with no copy is dropped:
// all of it was boundaries, each checked.
void LayoutSource::keep_stage_representatives() {
  std::map<std::string, std::pair<int, int>> stages;  // logical module -> first and last stage holding it
  for (size_t g = 0; g < groups_.size(); ++g)
    for (const Shard& s : groups_[g].shards) {
      auto [it, fresh] = stages.try_emplace(modules_[g], s.pp, s.pp);
      it->second = {std::min(it->second.first, s.pp), std::max(it->second.second, s.pp)};
    }
  std::vector<StageCopy> boundary, all;
  for (size_t g = 0; g < groups_.size(); ++g) {
    Group& group = groups_[g];
    for (const Shard& s : group.shards) all.push_back({s.record, s.pp});
    const auto [first, last] = stages[modules_[g]];
    if (first == last) continue;
    std::vector<StageCopy> copies;
    for (const Shard& s : group.shards) copies.push_back({s.record, s.pp});
    const std::vector<StageCopy> kept = stage_representatives(inner_->records(), copies, first, last, boundary);
    std::vector<Shard> shards;
    for (const Shard& s : group.shards)
      if (std::any_of(kept.begin(), kept.end(), [&](const StageCopy& k) { return k.record == s.record; })) shards.push_back(s);
    group.shards = std::move(shards);
    if (!group.shards.empty()) coords_[g].pp = group.shards[0].pp;
  }
  check_stage_boundaries(*inner_, boundary, all, layout_.file, problems_);
}

// A group merges when it holds one shard of each TP rank of one dtype and shapes that combine by its plan.
void LayoutSource::check_group(Group& g, const std::string& name) {
  const RecordList& in = inner_->records();
  std::sort(g.shards.begin(), g.shards.end(), [](const Shard& a, const Shard& b) { return a.tp < b.tp; });
  const Record& first = in[g.shards[0].record];
  auto fail = [&](const std::string& why) {
    problems_.push_back(Status::Invalid(fmt::format("{}: {} (step {}): {}; its shards are compared as they are", layout_.file, name, first.step, why)));
    g.merged = false;
  };
  if (first.rank < 0) return;  // plain tensor files: nothing to merge
  const SplitRule* rule = layout_.rule_for(first.module);
  if (const ParamSplit* recorded = recorded_split(first); recorded != nullptr)
    if (const std::string conflict = plan_conflict(first, rule, *recorded, layout_.file); !conflict.empty()) {
      problems_.push_back(Status::Invalid(fmt::format("{} (step {}): {}; its shards are compared as they are", name, first.step, conflict)));
      g.merged = false;
      return;
    }
  if (g.plan.combine == Combine::kUnsupported) return fail(unsupported_reason(first, rule, recorded_split(first)));
  bool complete = static_cast<int>(g.shards.size()) == side_.tp;
  for (size_t k = 0; complete && k < g.shards.size(); ++k) complete = g.shards[k].tp == static_cast<int>(k);
  if (!complete) return fail(fmt::format("{} of {} TP shards recorded", g.shards.size(), side_.tp));
  for (const Shard& s : g.shards) {
    const Record& r = in[s.record];
    if (r.dtype != first.dtype) return fail(fmt::format("TP shard {} is {}, shard 0 {}", s.tp, dtype_name(r.dtype), dtype_name(first.dtype)));
    if (r.shape.size() != first.shape.size()) return fail(fmt::format("TP shard {} has {} dimensions, shard 0 {}", s.tp, r.shape.size(), first.shape.size()));
    for (size_t d = 0; d < r.shape.size(); ++d)
      if (r.shape[d] != first.shape[d] && !(g.plan.combine == Combine::kConcat && static_cast<int>(d) == g.plan.dim))
        return fail(fmt::format("TP shard {} has shape {} and shard 0 {}: they do not {}", s.tp, fmt::join(r.shape.vec(), "x"),
                                fmt::join(first.shape.vec(), "x"), g.plan.combine == Combine::kConcat ? "concatenate" : "combine"));
  }
}

// A group that does not merge: each of its shards is a record of its own, under its own name and rank.
void LayoutSource::keep_shards_apart(size_t group) {
  const std::vector<Shard> shards = groups_[group].shards;  // a copy: groups_ grows below
  for (const Shard& s : shards) {
    Record r = inner_->records()[s.record];
    r.handle = groups_.size();
    groups_.push_back({ShardPlan{}, {s}, false});
    records_.push_back(std::move(r));
  }
}

Record LayoutSource::logical_record(const Group& g, size_t index) const {
  const RecordList& in = inner_->records();
  const Record& first = in[g.shards[0].record];
  Record r = first;
  r.name = names_[index];
  r.module = modules_[index];
  r.handle = index;
  if (first.rank < 0) return r;
  r.rank = coords_[index].dp;
  r.order = phase_rank(first, coords_[index], side_.pp) * (int64_t{1} << 40) + first.order;
  std::vector<const Record*> shards;
  for (const Shard& s : g.shards) shards.push_back(&in[s.record]);
  for (const Record* s : shards) r.has_data = r.has_data && s->has_data;
  if (g.plan.combine == Combine::kConcat) {
    Shape shape = first.shape.vec();
    shape[static_cast<size_t>(g.plan.dim)] = 0;
    for (const Record* s : shards) shape[static_cast<size_t>(g.plan.dim)] += s->shape[static_cast<size_t>(g.plan.dim)];
    r.shape = shape;
    r.stats = concat_stats(shards);
    r.crc32c.reset();
  } else if (g.plan.combine == Combine::kSum) {
    r.stats.reset();  // the statistics of a sum do not follow from its parts'
    r.crc32c.reset();
  }
  return r;
}

void LayoutSource::build_records() {
  const size_t n = groups_.size();
  for (size_t g = 0; g < n; ++g) {
    if (groups_[g].shards.empty()) continue;  // every copy a PP stage boundary, checked
    if (!groups_[g].merged && inner_->records()[groups_[g].shards[0].record].rank >= 0) keep_shards_apart(g);
    else records_.push_back(logical_record(groups_[g], g));
  }
  // Execution order within each (rank, step), renumbered from 0 as one unsharded run would number it.
  std::vector<size_t> idx(records_.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const Record &x = records_[a], &y = records_[b];
    return std::tie(x.rank, x.step, x.order) < std::tie(y.rank, y.step, y.order);
  });
  std::map<std::pair<int, int64_t>, int64_t> next;  // (rank, step) -> next order
  for (size_t i : idx) {
    Record& r = records_[i];
    if (r.rank >= 0) r.order = next[{r.rank, r.step}]++;
  }
}

// A merged record's TP shards as slices of its concatenation dimension; a record of a later PP stage is
// one part, its stage. Replicas and partial sums are not slices: an error is in all of them or none.
std::vector<RecordShard> LayoutSource::shards(const Record& r) const {
  if (r.handle >= groups_.size() || !groups_[r.handle].merged || inner_->records()[groups_[r.handle].shards[0].record].rank < 0)
    return {};
  const Group& g = groups_[r.handle];
  const std::string stage = side_.pp > 1 ? fmt::format("PP stage {} of {}", coords_[r.handle].pp, side_.pp) : "";
  std::vector<RecordShard> out;
  if (g.plan.combine == Combine::kConcat && g.shards.size() > 1) {
    int64_t at = 0;
    for (const Shard& s : g.shards) {
      const int64_t len = inner_->records()[s.record].shape[static_cast<size_t>(g.plan.dim)];
      out.push_back({fmt::format("TP shard {} of {}{}{}", s.tp, side_.tp, stage.empty() ? "" : ", ", stage), g.plan.dim, at, at + len});
      at += len;
    }
  } else if (!stage.empty()) {
    out.push_back({stage, -1, 0, 0});
  }
  return out;
}

struct Segment {
  std::byte* to;
  const std::byte* from;
  size_t bytes;
};

// The copies of a merge on every thread: a merge is a pass over memory before its pair's kernel, which
// on one thread made a merged comparison 3x the unsharded one (bench/layout/merge_bench.py). Large
// segments are cut into 4 MiB pieces so that a concatenation along the first dimension (one segment a
// shard) spreads as well as one along the last (a segment a row and shard).
void copy_segments(const std::vector<Segment>& segments) {
  constexpr size_t kPiece = size_t{4} << 20;
  std::vector<Segment> pieces;
  for (const Segment& s : segments)
    for (size_t at = 0; at < s.bytes; at += kPiece) pieces.push_back({s.to + at, s.from + at, std::min(kPiece, s.bytes - at)});
  const auto n = static_cast<int64_t>(pieces.size());
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t i = 0; i < n; ++i) std::memcpy(pieces[static_cast<size_t>(i)].to, pieces[static_cast<size_t>(i)].from, pieces[static_cast<size_t>(i)].bytes);
}

// A C-order tensor of `numel` elements whose bytes the caller writes.
TensorView uninitialised_tensor(BufferPool& pool, DType dtype, Shape shape, int64_t numel) {
  std::shared_ptr<std::byte[]> bytes = pool.get(static_cast<size_t>(numel) * dtype_size(dtype));
  TensorView v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.numel = numel;
  v.data = bytes.get();
  v.owner = std::move(bytes);
  return v;
}

// Each shard's bytes in C order and native byte order: a view to read directly, or its values decoded.
bool plain_bytes(const TensorView& v) { return v.is_c_contiguous() && !v.byteswapped; }

std::vector<double> decoded(const TensorView& v) {
  std::vector<double> out(static_cast<size_t>(v.numel));
  decode_to_double(v, 0, v.numel, out.data());
  return out;
}

// Values rounded to `dtype` as it stores them (little-endian, the bytes a dump holds).
void encode_into(DType dtype, const double* values, int64_t n, std::byte* out) {
  const size_t size = dtype_size(dtype);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = encode_rne(dtype, values[i]);
    std::memcpy(out + static_cast<size_t>(i) * size, &bits, size);
  }
}

Result<std::vector<TensorView>> load_shards(const RecordSource& inner, const Group& g) {
  std::vector<TensorView> views;
  for (const Shard& s : g.shards) {
    Result<TensorView> v = inner.load(inner.records()[s.record]);
    if (!v.ok()) return Status(v.status().code(), fmt::format("TP shard {}: {}", s.tp, v.status().message()));
    views.push_back(std::move(*v));
  }
  return views;
}

Result<TensorView> LayoutSource::load(const Record& r) const {
  if (r.handle >= groups_.size()) return Status::Internal(r.name.str() + ": not a record of this source");
  const Group& g = groups_[r.handle];
  if (!g.merged || g.shards.size() == 1) return inner_->load(inner_->records()[g.shards[0].record]);
  switch (g.plan.combine) {
    case Combine::kConcat: return load_concat(r, g);
    case Combine::kSum: return load_sum(r, g);
    default: return load_replicated(r, g);
  }
}

// One replica, after checking that every TP rank holds the same values (bit for bit: the ranks compute
// the same thing from the same data; a replica that differs is a fault of its own, RANK_INCONSISTENT).
Result<TensorView> LayoutSource::load_replicated(const Record& r, const Group& g) const {
  PARITY_ASSIGN_OR_RETURN(std::vector<TensorView> views, load_shards(*inner_, g));
  const TensorView& first = views[0];
  for (size_t k = 1; k < views.size(); ++k) {
    const TensorView& v = views[k];
    const bool same = plain_bytes(first) && plain_bytes(v) ? std::memcmp(first.data, v.data, static_cast<size_t>(first.nbytes())) == 0
                                                           : decoded(first) == decoded(v);
    if (!same)
      return Status::Invalid(fmt::format("RANK_INCONSISTENT: {} is replicated across the TP ranks, but TP shard {} differs from "
                                         "shard 0 ({})", r.name.view(), g.shards[k].tp, layout_.file));
  }
  return first;
}

// The shards side by side along the plan's dimension: for each index of the dimensions before it, each
// shard's block in turn.
Result<TensorView> LayoutSource::load_concat(const Record& r, const Group& g) const {
  PARITY_ASSIGN_OR_RETURN(std::vector<TensorView> views, load_shards(*inner_, g));
  const size_t dim = static_cast<size_t>(g.plan.dim), size = dtype_size(r.dtype);
  int64_t outer = 1;
  for (size_t d = 0; d < dim; ++d) outer *= r.shape[d];
  int64_t numel = 0;
  for (const TensorView& v : views) numel += v.numel;
  TensorView merged = uninitialised_tensor(*buffers_, r.dtype, r.shape.vec(), numel);
  std::vector<std::vector<double>> values(views.size());
  for (size_t k = 0; k < views.size(); ++k)
    if (!plain_bytes(views[k])) values[k] = decoded(views[k]);
  std::byte* out = const_cast<std::byte*>(merged.data);
  std::vector<Segment> copies;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t k = 0; k < views.size(); ++k) {
      const int64_t block = outer > 0 ? views[k].numel / outer : 0;
      if (values[k].empty()) copies.push_back({out, views[k].data + static_cast<size_t>(o * block) * size, static_cast<size_t>(block) * size});
      else encode_into(r.dtype, values[k].data() + o * block, block, out);
      out += static_cast<size_t>(block) * size;
    }
  }
  copy_segments(copies);
  // Copied: the shards' file pages go back to the kernel (they fault in again if read once more), so a
  // merge holds the merged tensor, not its shards as well.
  for (const TensorView& v : views) release_pages(v, 0, v.numel);
  return merged;
}

// The all-reduce the run records before: the shards' sum, in fp64, rounded once to the record's dtype.
Result<TensorView> LayoutSource::load_sum(const Record& r, const Group& g) const {
  PARITY_ASSIGN_OR_RETURN(std::vector<TensorView> views, load_shards(*inner_, g));
  std::vector<double> sum(static_cast<size_t>(views[0].numel), 0.0), part(sum.size());
  for (const TensorView& v : views) {
    decode_to_double(v, 0, v.numel, part.data());
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
  }
  std::vector<std::byte> bytes(sum.size() * dtype_size(r.dtype));
  encode_into(r.dtype, sum.data(), static_cast<int64_t>(sum.size()), bytes.data());
  return make_owned_tensor(r.dtype, r.shape.vec(), std::move(bytes));
}

}  // namespace

std::unique_ptr<RecordSource> merge_shards(std::unique_ptr<RecordSource> inner, const Layout& layout, const SideLayout& side) {
  return std::make_unique<LayoutSource>(std::move(inner), layout, side);
}

}  // namespace parity::layout
