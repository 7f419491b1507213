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
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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

// What a capture recorded of how one parameter is split across the TP ranks (the fingerprint's
// parallel.params, docs/layout.md "Recorded by the capture"): Megatron's partition_dim / partition_stride of
// a tensor_model_parallel parameter, or a DTensor's Shard(d) on the TP mesh dimension; sequence_parallel: a
// replicated parameter whose gradient is each rank's partial sum until finalize_model_grads reduces it.
struct ParamSplit {
  int partition_dim = -1;  // -1: not split across the TP ranks
  int partition_stride = 1;
  bool sequence_parallel = false;
};
using ParamSplits = std::map<std::string, ParamSplit>;  // by the parameter's named_parameters() name

// How one side's ranks are laid out. `order` lists the parallel dimensions fastest-varying first
// (Megatron's default: TP, then DP, then PP): rank r has tp = r mod tp, then dp, then pp.
struct SideLayout {
  int tp = 1, pp = 1, dp = 1;
  std::vector<std::string> order = {"tp", "dp", "pp"};
  // Layers held by each PP stage, in stage order (empty: num_layers / pp each); a record of stage s whose
  // module path holds "<layers>.<n>" is layer n + (layers of stages before s) of the model.
  std::vector<int> stage_layers;
  int num_layers = 0;
  // The keys of the side that were stated (a layout file's "tp", "order", ...; a capture's recorded sizes),
  // so that a file's side and a capture's combine (combine_sides): empty when nothing said anything.
  std::vector<std::string> stated;
  ParamSplits params;  // what the side's capture recorded of its parameters' splits (empty: nothing)
  bool sharded() const { return tp > 1 || pp > 1; }
  bool states(std::string_view key) const;
  // "" when every PP stage's layers are known (pp 1, "stage_layers", or "num_layers" divisible by pp); else why not.
  std::string layers_problem() const;
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

// One side's layout as its capture recorded it, from each rank's fingerprint's "parallel" object (docs/layout.md
// "Recorded by the capture"): sizes and order (the order found from every rank's coordinates when the capture
// gave none; `stated` lists what it gave) and its parameters' splits (the union over the ranks: a PP stage
// holds only its own layers' parameters). nullopt when no rank records one. Errors name `run` and the rank:
// sizes that differ between ranks, coordinates that fit no rank order, a dimension not merged yet (context
// parallel).
Result<std::optional<SideLayout>> recorded_layout(const std::map<int, std::string>& fingerprints, const std::string& run);
// A side's layout from a layout file's side and the capture's: each size and the order from whichever
// states it, the layers from the file (else the capture), the parameters' splits from the capture; both
// stating one that differs is an error naming the file and the run.
Result<SideLayout> combine_sides(const SideLayout& file_side, const std::optional<SideLayout>& recorded,
                                 const std::string& file, const std::string& side_name, const std::string& run);

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
// `recorded`: what the capture recorded of a parameter-like record's parameter (nullptr: nothing); it
// places the record without a rule. A rule that places it otherwise is a conflict (plan_conflict).
ShardPlan shard_plan(const Record& r, const SplitRule* rule, const ParamSplit* recorded = nullptr);
// "" when the rule and the recorded split agree on a parameter-like record (or either is absent); else why
// not, naming the rule's position in `file` and the recorded partition_dim.
std::string plan_conflict(const Record& r, const SplitRule* rule, const ParamSplit& recorded, const std::string& file);
// Why a record's plan is kUnsupported, for its problem.
std::string unsupported_reason(const Record& r, const SplitRule* rule, const ParamSplit* recorded);
// The parameter a parameter-like record is of, as named_parameters() names it ("layers.0.mlp.up.weight"),
// "" for other records: the key of ParamSplits.
std::string parameter_path(const Record& r);

// A source presenting `inner`'s records as one unsharded run: each record's TP shards merged by its
// plan, PP stages' layer numbers made global, the record's rank its DP rank. Records whose shards do
// not fit together (a shard missing, shapes that do not concatenate, replicas that differ) are kept
// under their own names with a problem each, so that the run cannot pass (docs/layout.md).
std::unique_ptr<RecordSource> merge_shards(std::unique_ptr<RecordSource> inner, const Layout& layout,
                                           const SideLayout& side);

// `parity compare [--layout FILE]`: each side's layout from the file and from what its capture recorded
// (combine_sides); each side laid out over several TP or PP ranks (golden: sources.sources[0], target: [1])
// is read through merge_shards. Without a file, nothing changes unless the captures recorded layouts that
// differ and one is sharded (two runs laid out alike compare rank by rank, as always). Not yet with sources
// divided among processes by rank (mpirun): Unsupported.
Status apply_layout(const std::string& layout_file, DividedSources& sources);

// "layers.3.mlp" on PP stage s: the module path with its layer number made global (unchanged when the
// path holds no "<layers>.<n>").
std::string global_layer_path(std::string_view path, const std::string& layers, int offset);
int layer_offset(const SideLayout& side, int pp_rank);

}  // namespace parity::layout
