// Where the maxima of a compared tensor are: the kernels measure maxima without indices, and an index
// takes a scan of decoded data; compare_tensors records per chunk where its maxima are
// (summarise_maxima) and, once the chunks are combined, locate_maxima scans only the stretch that holds
// the tensor's first maximum.
#pragma once

#include <cstdint>
#include <vector>

#include "metrics/block_kernel.h"
#include "metrics/pair_decoder.h"
#include "metrics/partial.h"

namespace parity::metrics_detail {

// Where a chunk's maxima are. The kernels give maxima without indices, and an index takes a scan of a
// decoded block; so the scans run once per tensor, on the stretch that holds the tensor's first maximum
// (locate_maxima), not once per chunk. A stretch is what one Partial covers: a block, or a span of
// kSpanBlocks blocks (SpanFn), named by its first block. A stretch of the bf16 fp32-lane kernel carries
// only the fp32 rounding of its largest relative error (Partial::max_rel_fp32), resolved by locate_maxima.
struct ChunkMaxima {
  double ad = -1;                 // the chunk's max |d| (exact from every kernel)
  int64_t ad_block = -1;          // the first of its blocks attaining it
  double rel_exact = -1;          // the largest fp64 max_rel of its blocks measured in fp64
  int64_t rel_exact_block = -1;   // the first block attaining it
  double rel_fp32 = -1;           // the largest fp32-rounded max_rel of its fp32-lane blocks
  uint64_t rel_fp32_blocks = 0;   // bit j: the stretch starting at block j is at rel_fp32
  bool rel_fp32_distinct = true;  // each of those stretches is max_rel_fp32_distinct
  uint64_t span_starts = 0;       // bit j: a span of kSpanBlocks blocks (one Partial) starts at block j
};
static_assert(kBlocksPerChunk <= 64, "ChunkMaxima::rel_fp32_blocks holds a bit per block");

// Records where the maxima of a chunk's stretches are (parts[k] starts at block first_block[k]), and
// takes the fp32-rounded max_rel out of the pairwise combine (set to -1): locate_maxima gives the tensor
// its max_rel.
void summarise_maxima(Partial* parts, const int64_t* first_block, int64_t nparts, ChunkMaxima& cm);

// The tensor's max |d| index, and its max_rel with index, from the chunks' summaries: `total` is the
// combined Partial (its max_ad is right, its max_rel covers the fp64-measured blocks only); the
// scans decode through `decoder` (numel elements in all).
//
// max_rel: a block of the fp32-lane kernel carries the fp32 rounding M of its maximum. Rounding is
// monotone, and two different quotients of such blocks (bf16 values at most 15 binades apart) differ
// by far more than an fp64 ulp, so a block whose M is below the largest such value F holds a smaller
// fp64 maximum than the blocks at F; and where F is below pred₃₂(RD₃₂(E)), E the largest fp64-measured
// maximum, every such block holds less than E. Otherwise the blocks at F are measured in fp64 (a scan
// of the decoded block) — only the first of them when all are max_rel_fp32_distinct (their maxima are
// then one quotient, the same fp64 value). The tensor's maximum is the larger of E and those values,
// and its index is that of the first block, in order, attaining it.
void locate_maxima(Partial& total, const std::vector<ChunkMaxima>& maxima, const PairDecoder& decoder,
                   const KernelParams& params, int64_t numel);

}  // namespace parity::metrics_detail
