// compare/judge.h — turning one pair's measurements into a verdict and a reason.
// The rules and their sources are in include/parity/thresholds.h and docs/thresholds.md.
#pragma once

#include <cstdint>
#include <string>

#include "parity/compare.h"

namespace parity::compare {

struct Judgement {
  Verdict verdict = Verdict::kPass;
  std::string reason;
};

// Tensor mode: msprobe's fail rules, then the seed documents' pass references.
Judgement judge_tensor(const PairMetrics& m, const DTypeThresholds& th);

// msprobe's statistics-mode comparison of two summaries: differences and relative errors of Max,
// Min, Mean and Norm.
StatsDifferences compare_stats(const TensorStats& golden, const TensorStats& target);
Judgement judge_stats(const TensorStats& golden, const TensorStats& target, const StatsDifferences& s,
                      const DTypeThresholds& th);

// Checksum mode: equal CRC32C of the raw bytes means bit-identical.
Judgement judge_checksum(uint32_t golden, uint32_t target);

// Number formatting shared by reasons: "%.4g" (nan/inf spelled out); cosines with "%.6f", since they
// live just below 1 where %g would print 0.9999 for both 0.99985 and 0.99994.
std::string format_metric(double v);
std::string format_cosine(double v);

}  // namespace parity::compare
