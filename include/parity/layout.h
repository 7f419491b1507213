// parity/layout.h — comparing runs laid out differently (tensor / pipeline / data parallel): a layout file
// says how a model's modules are split across ranks and how each side of a comparison is laid out; a
// sharded side is read through a merging source that presents each logical tensor once, as an unsharded
// run would record it (docs/layout.md).
//
// Megatron-LM's conventions (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding, sequence
// parallelism, the rank order "tp-dp-pp"): a column-parallel linear holds rows [k·O/t, (k+1)·O/t) of its
// weight [O, I] on TP rank k and produces that slice of the output's last dimension; a row-parallel
// linear holds columns of its weight, reads that slice of its input's last dimension and all-reduces its
// output (a partial sum on each rank before the reduction). How each record of such a module combines is
// one table, `shard_plan` (src/sources/layout_plan.cpp, docs/layout.md "How shards combine").
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "parity/name_pattern.h"
#include "parity/open_source.h"
#include "parity/source.h"
#include "parity/status.h"

namespace parity::layout {

// How a module is split across the tensor-parallel ranks.
enum class Split {
  kNone,      // replicated: every TP rank holds the same module (norms, activations, the loss)
  kColumn,    // output features split (ColumnParallelLinear: q/k/v, gate/up projections, a parallel lm_head)
  kRow,       // input features split, output all-reduced (RowParallelLinear: o/down projections)
  kVocab,     // vocabulary rows split, output all-reduced (VocabParallelEmbedding)
  kSequence,  // activations split along the sequence (sequence-parallel norms and dropouts)
};
const char* split_name(Split s);

struct SplitRule {
  NamePattern modules;  // searched in the record's module path
  Split split = Split::kNone;
  int dim = 0;          // kSequence: the sequence dimension of the activations (Megatron's [s, b, h]: 0)
  bool partial = false;  // kRow / kVocab: outputs recorded before their all-reduce (a partial sum per rank)
  int line = 0;          // the rule's position in the file's "splits" list, for messages
};

// How one side's ranks are laid out. `order` lists the parallel dimensions fastest-varying first
// (Megatron's default: TP, then DP, then PP): rank r has tp = r mod tp, then dp, then pp.
struct SideLayout {
  int tp = 1, pp = 1, dp = 1;
  std::vector<std::string> order = {"tp", "dp", "pp"};
  // Layers held by each PP stage, in stage order (empty: num_layers / pp each); a record of stage s whose
  // module path holds "<layers>.<n>" is layer n + (layers of stages before s) of the model.
  std::vector<int> stage_layers;
  int num_layers = 0;
  bool sharded() const { return tp > 1 || pp > 1; }
};

struct RankCoords {
  int tp = 0, pp = 0, dp = 0;
};

struct Layout {
  std::string file;
  std::vector<SplitRule> splits;
  std::string layers = "layers";  // the module list whose index PP stages offset
  SideLayout golden, target;
  // The first rule whose pattern is found in `module`, or nullptr (replicated).
  const SplitRule* rule_for(std::string_view module) const;
};

// Reads a layout file (JSON, schema parity.layout/1, docs/layout.md). Errors name the file and the key.
Result<Layout> read_layout(const std::filesystem::path& file);

// Where `rank` sits in a side's layout. Invalid when rank is outside tp·pp·dp.
Result<RankCoords> coords_of(int rank, const SideLayout& side);

// How the shards of one record combine into the logical tensor.
enum class Combine {
  kReplicated,  // every TP rank holds the whole tensor: checked for agreement, compared once
  kConcat,      // the shards are consecutive slices along `dim`
  kSum,         // each shard is a partial sum (before an all-reduce)
  kUnsupported, // a record the layout cannot place (an op recorded inside a split module): a problem
};
struct ShardPlan {
  Combine combine = Combine::kReplicated;
  int dim = 0;  // kConcat: the dimension, counted from the front (a negative rule dim is resolved)
};
ShardPlan shard_plan(const Record& r, const SplitRule* rule);

// A source presenting `inner`'s records as one unsharded run: each record's TP shards merged by its
// plan, PP stages' layer numbers made global, the record's rank its DP rank. Records whose shards do
// not fit together (a shard missing, shapes that do not concatenate, replicas that differ) are kept
// under their own names with a problem each, so that the run cannot pass (docs/layout.md).
std::unique_ptr<RecordSource> merge_shards(std::unique_ptr<RecordSource> inner, const Layout& layout,
                                           const SideLayout& side);

// `parity compare --layout FILE`: reads the file and reads each side it lays out over several TP or PP
// ranks (golden: sources.sources[0], target: [1]) through merge_shards. Nothing without a file. Not yet
// with sources divided among processes by rank (mpirun): Unsupported.
Status apply_layout(const std::string& layout_file, DividedSources& sources);

// "layers.3.mlp" on PP stage s: the module path with its layer number made global (unchanged when the
// path holds no "<layers>.<n>").
std::string global_layer_path(std::string_view path, const std::string& layers, int offset);
int layer_offset(const SideLayout& side, int pp_rank);

}  // namespace parity::layout
