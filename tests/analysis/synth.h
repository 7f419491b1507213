// tests/analysis/synth.h — synthetic compare results for the analysis and diagnosis tests: events named
// as parity's capture names them ("<module>/<direction>/<role>/<index>"), with chosen relative errors.
#pragma once

#include <cmath>
#include <deque>
#include <string>

#include "parity/compare.h"

namespace parity::test {

struct Synth {
  CompareResult result;
  int64_t order = 0;
  // The rows' records (rows point at their records, as at a source's listing); a deque keeps them put.
  std::deque<Record> golden_records, target_records;

  // The records of the last row added, for a test to adjust.
  Record& last_golden() { return golden_records.back(); }
  Record& last_target() { return target_records.back(); }

  // Adds one row. rel = relative L2 error of target vs golden; nan_t = NaNs in the target only.
  CompareRow& row(const std::string& module, const std::string& op, const std::string& direction,
                  const std::string& role, int index, double rel, DType gd = DType::kF32, DType td = DType::kF32,
                  int64_t step = 0, int rank = 0, int64_t nan_t = 0) {
    CompareRow r;
    const std::string base = op.empty() || op[0] < 'a' ? module : module + "/" + op + "#0";
    Record& g = golden_records.emplace_back();
    Record& t = target_records.emplace_back();
    for (Record* rec : {&g, &t}) {
      rec->name = base + "/" + direction + "/" + role + "/" + std::to_string(index);
      rec->module = module;
      rec->op = op;
      rec->direction = direction;
      rec->role = role;
      rec->index = index;
      rec->step = step;
      rec->rank = rank;
      rec->order = order;
      rec->shape = {4, 64};
      rec->has_data = false;
    }
    ++order;
    g.dtype = gd;
    t.dtype = td;
    r.golden = &g;
    r.target = &t;
    r.mode = CompareMode::kTensor;
    PairMetrics m;
    m.numel = m.compared = 256;
    m.rel_l2 = rel;
    m.euclidean = rel * 16;
    m.cosine = 1 - rel * rel / 2;
    m.max_abs = rel * 3;
    m.mean_abs = rel;
    m.golden.absmax = m.target.absmax = 4;
    m.golden.min = m.target.min = -4;
    m.golden.max = m.target.max = 4;
    if (nan_t > 0) {
      m.target.nan_count = nan_t;
      m.nonfinite_agree = false;
      m.nonfinite_mismatch = nan_t;
      m.rel_l2 = kNaN;
    }
    r.metrics = m;
    r.verdict = (nan_t > 0 || rel > 1e-2) ? Verdict::kFail : Verdict::kPass;
    r.reason = r.verdict == Verdict::kFail ? "synthetic failure" : "";
    result.rows.push_back(r);
    return result.rows.back();
  }

  // A module event with one input, one output (and optionally a parameter) in forward.
  // A LayerNorm "norm" whose bf16 weight, compared at step 1, failed its update check: `u` (from step 0,
  // differs) says how its update since step 0 compares with the golden's; its own value agrees.
  CompareRow& stalled_norm_weight(ParameterUpdate u) {
    module("norm", "LayerNorm", 0, 1e-8);
    CompareRow& p = row("norm", "LayerNorm", "forward", "parameter", 0, 1e-8, DType::kF32, DType::kBF16, /*step=*/1);
    last_golden().name = last_target().name = "norm/forward/parameter/weight";
    u.from_step = 0;
    u.differs = true;
    p.update = u;
    p.verdict = Verdict::kFail;
    p.reason = "its update since step 0 differs by 1 of the update's size";
    return p;
  }

  void module(const std::string& name, const std::string& cls, double in_rel, double out_rel,
              DType td = DType::kF32, double param_rel = -1, int64_t step = 0, int rank = 0) {
    if (param_rel >= 0) row(name, cls, "forward", "parameter", 0, param_rel, DType::kF32, td, step, rank);
    row(name, cls, "forward", "input", 0, in_rel, DType::kF32, td, step, rank);
    row(name, cls, "forward", "output", 0, out_rel, DType::kF32, td, step, rank);
  }
};

}  // namespace parity::test
