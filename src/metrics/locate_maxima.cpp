// summarise_maxima and locate_maxima (metrics/locate_maxima.h).
#include "metrics/locate_maxima.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace parity::metrics_detail {

void summarise_maxima(Partial* parts, const int64_t* first_block, int64_t nparts, ChunkMaxima& cm) {
  for (int64_t k = 0; k < nparts; ++k) {
    Partial& b = parts[k];
    const int64_t j = first_block[k];
    if (b.max_ad > cm.ad) {  // strictly greater: the first block keeps it
      cm.ad = b.max_ad;
      cm.ad_block = j;
    }
    if (!b.max_rel_fp32) {
      if (b.max_rel > cm.rel_exact) {
        cm.rel_exact = b.max_rel;
        cm.rel_exact_block = j;
      }
      continue;
    }
    if (b.max_rel > cm.rel_fp32) {
      cm.rel_fp32 = b.max_rel;
      cm.rel_fp32_blocks = 0;
      cm.rel_fp32_distinct = true;
    }
    if (b.max_rel == cm.rel_fp32) {
      cm.rel_fp32_blocks |= uint64_t{1} << j;
      cm.rel_fp32_distinct = cm.rel_fp32_distinct && b.max_rel_fp32_distinct;
    }
    b.max_rel = -1;
    b.max_rel_fp32 = false;
  }
}

namespace {


// A stretch of the tensor, by chunk and first block within the chunk, and its length in blocks;
// ordered by position.
struct BlockAt {
  int64_t chunk = -1, block = -1, blocks = 1;
  bool found() const { return chunk >= 0; }
  bool before(const BlockAt& o) const { return !o.found() || chunk < o.chunk || (chunk == o.chunk && block < o.block); }
  int64_t begin() const { return chunk * kChunk + block * kBlock; }
};

BlockAt stretch_at(const std::vector<ChunkMaxima>& maxima, int64_t chunk, int64_t block) {
  const bool span = (maxima[static_cast<size_t>(chunk)].span_starts >> block & 1) != 0;
  return BlockAt{chunk, block, span ? kSpanBlocks : 1};
}

// Decodes a stretch block by block and scans it: the largest error of a kind (kind 0 |d|, 1 relative)
// in fp64, or the flat index of the first element with that error equal to `value`.
class BlockScanner {
 public:
  BlockScanner(const PairDecoder& decoder, const KernelParams& params, int64_t numel)
      : decoder_(decoder), params_(params), numel_(numel) {}

  double max_of(BlockAt at, int kind) {
    double best = -1;
    for (int64_t b = at.begin(); b < end_of(at); b += kBlock) {
      best = std::max(best, max_of_block(gb_, tb_, load(b), params_, kind));
    }
    return best;
  }
  int64_t first_index(BlockAt at, int kind, double value) {
    for (int64_t b = at.begin(); b < end_of(at); b += kBlock) {
      const int64_t i = first_index_of_max(gb_, tb_, load(b), params_, kind, value);
      if (i >= 0) return b + i;
    }
    return -1;
  }

 private:
  int64_t end_of(BlockAt at) const { return std::min(numel_, at.begin() + at.blocks * kBlock); }
  // The block at flat index b into the buffers; its length.
  int64_t load(int64_t b) {
    const int64_t n = std::min(kBlock, numel_ - b);
    if (b != loaded_) decoder_.decode(b, n, gb_, tb_);
    loaded_ = b;
    return n;
  }

  const PairDecoder& decoder_;
  const KernelParams& params_;
  int64_t numel_;
  int64_t loaded_ = -1;
  alignas(64) double gb_[kBlock + 4];
  alignas(64) double tb_[kBlock + 4];
};

}  // namespace

void locate_maxima(Partial& total, const std::vector<ChunkMaxima>& maxima, const PairDecoder& decoder,
                   const KernelParams& params, int64_t numel) {
  BlockScanner scan(decoder, params, numel);
  const int64_t nchunks = static_cast<int64_t>(maxima.size());
  if (total.max_ad >= 0) {
    for (int64_t c = 0; c < nchunks; ++c) {
      if (maxima[c].ad != total.max_ad) continue;
      total.max_ad_index = scan.first_index(stretch_at(maxima, c, maxima[c].ad_block), 0, total.max_ad);
      break;
    }
  }

  double exact = -1, fp32 = -1;
  BlockAt exact_at;
  bool distinct = true;
  for (int64_t c = 0; c < nchunks; ++c) {
    const ChunkMaxima& cm = maxima[c];
    if (cm.rel_exact > exact) {
      exact = cm.rel_exact;
      exact_at = stretch_at(maxima, c, cm.rel_exact_block);
    }
    if (cm.rel_fp32 > fp32) {
      fp32 = cm.rel_fp32;
      distinct = true;
    }
    if (cm.rel_fp32 == fp32) distinct = distinct && cm.rel_fp32_distinct;
  }
  bool resolve = fp32 >= 0;
  if (resolve && exact >= 0) {
    float r = static_cast<float>(exact);  // RD₃₂(E), then its predecessor
    if (static_cast<double>(r) > exact) r = std::nextafter(r, -std::numeric_limits<float>::infinity());
    r = std::nextafter(r, -std::numeric_limits<float>::infinity());
    resolve = fp32 >= static_cast<double>(r);
  }
  double best = exact;
  BlockAt best_at = exact_at;
  if (resolve) {
    double resolved = -1;
    for (int64_t c = 0; c < nchunks; ++c) {
      if (maxima[c].rel_fp32 != fp32) continue;
      for (uint64_t bits = maxima[c].rel_fp32_blocks; bits != 0; bits &= bits - 1) {
        const BlockAt at = stretch_at(maxima, c, std::countr_zero(bits));
        if (!distinct || resolved < 0) resolved = scan.max_of(at, 1);
        if (resolved > best || (resolved == best && at.before(best_at))) {
          best = resolved;
          best_at = at;
        }
      }
    }
  }
  total.max_rel = best;
  total.max_rel_index = best_at.found() ? scan.first_index(best_at, 1, best) : -1;
}

}  // namespace parity::metrics_detail
