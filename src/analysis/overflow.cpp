// NaN/Inf origin, near-overflow warnings and gradient underflow statistics of one run
// (docs/diagnosis.md "parity overflow"). msprobe's rule for the origin: the first node whose inputs
// are all finite and one of whose outputs holds NaN/Inf; here per rank and step, in execution order.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "analysis/event_index.h"
#include "analysis/stats_exchange.h"
#include "fmt/format.h"
#include "parity/analysis.h"

namespace parity {

using analysis_detail::Slot;
using analysis_detail::slot_of;

namespace {

bool nonfinite(const TensorStats& s) { return s.nan_count > 0 || s.inf_count > 0; }

bool is_fill_op(const std::string& op) {
  static const char* const kFill[] = {"masked_fill", "masked_fill_", "where", "fill_", "full", "full_like",
                                      "triu", "tril", "__setitem__", "masked_scatter"};
  for (const char* f : kFill)
    if (op == f) return true;
  return false;
}

bool is_param_grad(const Record& r) {
  return r.role == "grad" || (r.direction == "backward" && slot_of(r) == Slot::kParameter);
}

ValueRange range_of(const MeasuredRecord& m) {
  ValueRange v;
  v.name = m.record->name;
  v.role = m.record->role;
  v.dtype = m.record->dtype;
  if (m.stats) {
    v.min = m.stats->min;
    v.max = m.stats->max;
    v.absmax = m.stats->absmax;
    v.numel = m.stats->numel;
    v.nan_count = m.stats->nan_count;
    v.inf_count = m.stats->inf_count;
  }
  return v;
}

// Why finite inputs can give NaN/Inf at this op: the largest finite input against the overflow points
// of exp (ln max) and of squares/products (sqrt max) in each float format, highest precision first.
std::string explain_origin(const NanOrigin& o) {
  double absmax = 0, maxv = -INFINITY;
  DType dt = DType::kF32;
  bool fp8_input = false;
  for (const ValueRange& r : o.inputs) {
    if (!dtype_is_float(r.dtype)) continue;  // token ids and masks do not overflow anything
    fp8_input = fp8_input || r.dtype == DType::kF8E4M3 || r.dtype == DType::kF8E5M2;
    if (!std::isnan(r.absmax) && r.absmax >= absmax) {
      absmax = r.absmax;
      dt = r.dtype;
    }
    if (!std::isnan(r.max)) maxv = std::max(maxv, r.max);
  }
  if (o.inputs.empty()) return "no inputs recorded for this event: its outputs are the first with NaN/Inf";
  const std::string what = o.op.empty() ? o.module : o.op;
  // Values larger than the output format can hold: the conversion (or the op computing in it) overflows.
  for (const ValueRange& out : o.outputs) {
    const FloatFormat* f = float_format(out.dtype);
    if (f != nullptr && absmax > f->max_finite && out.dtype != dt)
      return fmt::format("input |x| max {:.4g} > {:.6g}, the largest finite {}: converting to {} overflows "
                         "(in a real {} kernel the op before it — an exp without max subtraction, a square, a "
                         "product — already overflows)",
                         absmax, f->max_finite, dtype_name(out.dtype), dtype_name(out.dtype), dtype_name(out.dtype));
  }
  const bool exp_like = is_sensitive_op(what);
  std::string s;
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8E5M2, DType::kF8E4M3}) {
    if ((t == DType::kF8E5M2 || t == DType::kF8E4M3) && !fp8_input) break;  // fp8 only when the data is fp8
    const FloatFormat* f = float_format(t);
    if (exp_like && maxv > std::log(f->max_finite)) {
      s = fmt::format("input max {:.4g} > ln({:.6g}) = {:.4g}: exp overflows in {}", maxv, f->max_finite,
                      std::log(f->max_finite), dtype_name(t));
      break;
    }
    if (absmax > std::sqrt(f->max_finite)) {
      s = fmt::format("input |x| max {:.4g} > sqrt({:.6g}) = {:.4g}: squares and products overflow in {}", absmax,
                      f->max_finite, std::sqrt(f->max_finite), dtype_name(t));
      break;
    }
  }
  if (s.empty())
    s = fmt::format("inputs are finite with |x| ≤ {:.4g} ({}): NaN/Inf from the op itself (0/0, log of ≤ 0, "
                    "sqrt of < 0, inf − inf)",
                    absmax, dtype_name(dt));
  if (dt != DType::kF16 && s.find("f16") != std::string::npos && s.find("bf16") == std::string::npos)
    s += fmt::format(" (stored as {}, so an f16 computation inside the op)", dtype_name(dt));
  return s;
}

// An event of one (rank, step) stream as the NaN/Inf origin search reads it.
struct StreamEvent {
  const Record* first = nullptr;  // its first record: the event's name, direction, op
  int64_t first_order = -1;
  std::vector<const MeasuredRecord*> inputs, outputs;
};

// Where NaN/Inf are born in one (rank, step) stream: the earliest event whose outputs hold NaN/Inf
// that its inputs do not (fill ops' masks aside), or nullopt.
std::optional<NanOrigin> stream_origin(std::vector<StreamEvent>& evs) {
  std::stable_sort(evs.begin(), evs.end(), [](const StreamEvent& a, const StreamEvent& b) {
    return std::make_tuple(analysis_detail::direction_rank(a.first->direction), a.first_order) <
           std::make_tuple(analysis_detail::direction_rank(b.first->direction), b.first_order);
  });
  // Events are ranked by when their first non-finite output was recorded, not by when they started: a
  // module's outputs are recorded after everything it contains, so the op inside it where NaN/Inf
  // appear comes first.
  std::optional<size_t> born;
  int64_t born_at = 0;
  std::vector<int64_t> bad_at(evs.size(), -1);
  for (size_t k = 0; k < evs.size(); ++k) {
    for (const MeasuredRecord* m : evs[k].outputs)
      if (nonfinite(*m->stats) && (bad_at[k] < 0 || m->record->order < bad_at[k])) bad_at[k] = m->record->order;
  }
  // Fill ops (masked_fill, where, full, triu, ...) write ±Inf on purpose (attention masks). They are not
  // origins, and a later input holding exactly that many Inf (no NaN) is the mask travelling on.
  std::set<int64_t> mask_infs;
  for (size_t k = 0; k < evs.size(); ++k) {
    if (bad_at[k] < 0 || !is_fill_op(evs[k].first->op)) continue;
    for (const MeasuredRecord* m : evs[k].outputs)
      if (m->stats->nan_count == 0 && m->stats->inf_count > 0) mask_infs.insert(m->stats->inf_count);
    bad_at[k] = -1;
  }
  auto input_ok = [&](const MeasuredRecord* m) {
    const TensorStats& st = *m->stats;
    return st.nan_count == 0 && (st.inf_count == 0 || mask_infs.count(st.inf_count) > 0);
  };
  for (size_t k = 0; k < evs.size(); ++k) {
    if (bad_at[k] < 0) continue;
    const StreamEvent& ev = evs[k];
    // An event whose only non-finite outputs are the mask passing through is not an origin either.
    const bool only_mask = std::all_of(ev.outputs.begin(), ev.outputs.end(), [&](const MeasuredRecord* m) {
      return !nonfinite(*m->stats) || input_ok(m);
    });
    if (only_mask) {
      bad_at[k] = -1;
      continue;
    }
    const bool in_ok = std::all_of(ev.inputs.begin(), ev.inputs.end(), input_ok);
    const auto key = std::make_pair(analysis_detail::direction_rank(ev.first->direction), bad_at[k]);
    if (in_ok && (!born || key < std::make_pair(analysis_detail::direction_rank(evs[*born].first->direction), born_at))) {
      born = k;
      born_at = bad_at[k];
    }
  }
  int64_t contaminated = 0;
  if (born) {
    const int born_dir = analysis_detail::direction_rank(evs[*born].first->direction);
    for (size_t k = 0; k < evs.size(); ++k) {
      if (k == *born || bad_at[k] < 0) continue;
      const int dir = analysis_detail::direction_rank(evs[k].first->direction);
      if (std::make_pair(dir, bad_at[k]) > std::make_pair(born_dir, born_at)) ++contaminated;
    }
  }
  if (!born) return std::nullopt;
  const StreamEvent& ev = evs[*born];
  NanOrigin o;
  analysis_detail::set_event_identity(o, *ev.first);
  o.order = ev.first_order;
  for (const MeasuredRecord* m : ev.inputs) o.inputs.push_back(range_of(*m));
  for (const MeasuredRecord* m : ev.outputs) o.outputs.push_back(range_of(*m));
  o.contaminated = contaminated;
  o.role_is_grad = std::all_of(ev.outputs.begin(), ev.outputs.end(), [](const MeasuredRecord* m) {
    return !nonfinite(*m->stats) || is_param_grad(*m->record);
  });
  o.explanation = explain_origin(o);
  return o;
}

}  // namespace

OverflowReport analyse_overflow(const std::vector<MeasuredRecord>& records, const OverflowOptions& options) {
  OverflowReport rep;
  rep.records = static_cast<int64_t>(records.size());

  // Records in execution order; the events of one (rank, step) stream at a time (a million-event run
  // grouped every stream at once: 0.1 GB more at the peak of `compare`).
  std::vector<const MeasuredRecord*> sorted;
  sorted.reserve(records.size());
  for (const MeasuredRecord& m : records) sorted.push_back(&m);
  std::stable_sort(sorted.begin(), sorted.end(), [](const MeasuredRecord* a, const MeasuredRecord* b) {
    return std::make_tuple(a->record->rank, a->record->step, a->record->order) <
           std::make_tuple(b->record->rank, b->record->step, b->record->order);
  });
  std::vector<StreamEvent> evs;
  std::unordered_map<std::string_view, size_t> index;  // by event stem
  std::optional<std::tuple<int, int64_t>> stream;
  auto close_stream = [&] {
    if (std::optional<NanOrigin> o = stream_origin(evs)) rep.origins.push_back(std::move(*o));
    evs.clear();
    index.clear();
  };

  for (const MeasuredRecord* m : sorted) {
    const Record& r = *m->record;
    if (!m->stats) continue;
    ++rep.measured;
    const TensorStats& s = *m->stats;
    if (nonfinite(s)) ++rep.nonfinite_records;

    // Near overflow: |x| beyond a fraction of the largest finite value of a narrow float format.
    if (const FloatFormat* f = float_format(r.dtype);
        f != nullptr && f->max_finite < 1e6 && s.absmax > options.near_overflow_fraction * f->max_finite) {
      rep.near_overflow.push_back({r.name, event_name(r), r.direction, r.step, r.rank, r.dtype, s.absmax,
                                   options.near_overflow_fraction * f->max_finite});
    }

    if (is_param_grad(r)) {
      if (nonfinite(s)) rep.grads_overflow = true;
      if (s.numel > 0) {
        GradUnderflow g{r.name, r.module, r.step, r.rank, r.dtype, s.numel,
                        static_cast<double>(s.zero_count) / static_cast<double>(s.numel),
                        static_cast<double>(s.subnormal_count) / static_cast<double>(s.numel)};
        // Underflow is judged on fp16/bf16 gradients only (fp32 gradients do not underflow in practice), and
        // not on embedding tables, whose rows for tokens absent from the batch are exactly zero by design.
        const bool narrow = r.dtype == DType::kF16 || r.dtype == DType::kBF16;
        const bool sparse_by_design = r.op.find("Embedding") != std::string::npos || r.op == "embedding";
        const bool underflowing =
            narrow && !sparse_by_design && g.zero_fraction + g.subnormal_fraction >= options.underflow_warn_fraction;
        g.underflowing = underflowing;
        if (underflowing) rep.grads_underflow = true;
        if (narrow) rep.grad_underflow.push_back(std::move(g));
      }
    }

    const auto sk = std::make_tuple(r.rank, r.step);
    if (stream != sk) {
      if (stream) close_stream();
      stream = sk;
    }
    auto [it, inserted] = index.emplace(event_stem(r), evs.size());
    if (inserted) evs.push_back(StreamEvent{&r, r.order, {}, {}});
    StreamEvent& ev = evs[it->second];
    if (slot_of(r) == Slot::kInput || slot_of(r) == Slot::kParameter) ev.inputs.push_back(m);
    else ev.outputs.push_back(m);
  }
  if (stream) close_stream();

  // Loss-scale direction (seed 004 §3.2): overflowing gradients → lower it; underflowing → raise it.
  if (rep.grads_overflow) rep.loss_scale_advice = "lower";
  else if (rep.grads_underflow) rep.loss_scale_advice = "raise";
  return rep;
}

namespace {

// Computes the statistics of the record measured[i] for each i in `which`.
std::vector<analysis_detail::LoadedStats> load_stats(const RecordSource& run, const std::vector<MeasuredRecord>& measured,
                                                     const std::vector<size_t>& which) {
  std::vector<analysis_detail::LoadedStats> loaded;
  for (size_t i : which) {
    const Record& r = *measured[i].record;
    analysis_detail::LoadedStats l;
    l.index = i;
    Result<TensorView> view = run.load(r);
    if (view.ok()) l.stats = compute_stats(*view);
    else l.problem = view.status().WithContext(r.name);
    loaded.push_back(std::move(l));
  }
  return loaded;
}

// Computes the statistics of the records at `to_load` (indices into `measured`) that are this process's
// share — all of them alone; under a group, a contiguous byte-balanced range of them, or, for a capture
// divided by rank, those of its own ranks — and gathers them to process 0, which returns every
// process's results in record order (computing itself any that no process sent); the others return theirs.
std::vector<analysis_detail::LoadedStats> load_missing_stats(const RecordSource& run,
                                                             const std::vector<MeasuredRecord>& measured,
                                                             const std::vector<size_t>& to_load,
                                                             const OverflowOptions& options) {
  const ProcessGroup* group = options.group;
  if (!is_distributed(group)) return load_stats(run, measured, to_load);
  const bool by_rank = options.rank_shares != nullptr;
  std::vector<size_t> mine, others;
  if (by_rank) {
    const std::vector<int>& own = options.rank_shares->ranks[static_cast<size_t>(group->rank())];
    for (size_t i : to_load) {
      const bool own_rank = std::binary_search(own.begin(), own.end(), measured[i].record->rank);
      (!group->is_root() || own_rank ? mine : others).push_back(i);
    }
  } else {
    std::vector<int64_t> bytes;
    for (size_t i : to_load) {
      const Record& r = *measured[i].record;
      bytes.push_back(shape_numel(r.shape).ValueOr(0) * dtype_size(r.dtype));
    }
    const std::vector<int> owner = partition_by_bytes(bytes, group->size());
    for (size_t k = 0; k < to_load.size(); ++k)
      if (owner[k] == group->rank()) mine.push_back(to_load[k]);
  }
  std::vector<analysis_detail::LoadedStats> loaded = load_stats(run, measured, mine);
  if (by_rank)
    for (analysis_detail::LoadedStats& l : loaded) l.identity = analysis_detail::record_identity(*measured[l.index].record);
  // Process 0 decodes each process's message as it arrives, holding one message at a time.
  std::vector<analysis_detail::LoadedStats> received;
  Status st = group->gather_one_each(
      [&] { return analysis_detail::encode_loaded_stats(loaded, by_rank); },
      [&](int from, std::string& message) {
        Status decoded = analysis_detail::decode_loaded_stats(message, received);
        return decoded.ok() ? decoded : Status::Corrupt("process " + std::to_string(from) + ": " + decoded.message());
      });
  if (!st.ok()) group->abort("parity overflow: " + st.message(), 3);
  if (!group->is_root()) return loaded;
  if (by_rank) {  // identities → indices; a record nobody sent is computed here
    // Records sharing one identity cannot be told apart in a message: all of them are computed here.
    std::unordered_map<std::string, std::vector<size_t>> records_of;
    for (size_t i : others) records_of[analysis_detail::record_identity(*measured[i].record)].push_back(i);
    std::unordered_map<std::string, size_t> index_of;
    std::vector<size_t> unsent;
    for (const auto& [identity, is] : records_of) {
      if (is.size() == 1) index_of.emplace(identity, is[0]);
      else unsent.insert(unsent.end(), is.begin(), is.end());
    }
    std::erase_if(received, [&](analysis_detail::LoadedStats& l) {
      const auto it = index_of.find(l.identity);
      if (it == index_of.end()) return true;
      l.index = it->second;
      index_of.erase(it);
      return false;
    });
    for (const auto& [identity, i] : index_of) unsent.push_back(i);
    std::sort(unsent.begin(), unsent.end());
    for (analysis_detail::LoadedStats& l : load_stats(run, measured, unsent)) received.push_back(std::move(l));
  }
  for (analysis_detail::LoadedStats& l : received) loaded.push_back(std::move(l));
  std::stable_sort(loaded.begin(), loaded.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  return loaded;
}

}  // namespace

OverflowReport analyse_overflow(const RecordSource& run, const OverflowOptions& options) {
  std::vector<MeasuredRecord> measured;
  std::vector<size_t> to_load;
  measured.reserve(run.records().size());
  for (const Record& r : run.records()) {
    if ((options.step >= 0 && r.step >= 0 && r.step != options.step) ||
        (options.rank >= 0 && r.rank >= 0 && r.rank != options.rank))
      continue;
    if (!r.stats && r.has_data && options.load_missing_stats) to_load.push_back(measured.size());
    measured.push_back(MeasuredRecord{&r, r.stats ? &*r.stats : nullptr});
  }
  std::vector<analysis_detail::LoadedStats> loaded = load_missing_stats(run, measured, to_load, options);
  if (!is_output_process(options.group)) return {};  // its statistics went to process 0
  std::vector<Status> problems;
  for (analysis_detail::LoadedStats& l : loaded) {  // `loaded` outlives the analysis below
    if (l.stats) measured[l.index].stats = &*l.stats;
    else problems.push_back(std::move(l.problem));
  }
  OverflowReport rep = analyse_overflow(measured, options);
  rep.source = run.describe();
  rep.problems = run.problems();
  rep.problems.insert(rep.problems.end(), problems.begin(), problems.end());
  return rep;
}

MeasuredSide measured_records(const CompareResult& result, bool target_side) {
  MeasuredSide out;
  out.records.reserve(result.rows.size());
  for (const CompareRow& row : result.rows) {
    const Record* record = target_side ? row.target : row.golden;
    const TensorStats* stats = record->stats ? &*record->stats : nullptr;  // checksum rows: stored, if any
    if (row.metrics) {
      TensorStats& t = out.derived.emplace_back(target_side ? row.metrics->target : row.metrics->golden);
      if (row.metrics->nonfinite_agree && row.metrics->nonfinite_mismatch == 0) {
        // Both sides hold the same non-finite values at the same positions (a mask): for the comparison
        // they are agreed data, not an overflow of either run.
        t.nan_count = t.inf_count = t.pinf_count = t.ninf_count = 0;
      }
      // A loss-scaled target was compared unscaled; it overflows or underflows as stored (scaled).
      if (target_side && row.loss_scale_log2 != 0) t = scale_stats(t, row.loss_scale_log2);
      stats = &t;
    } else if (row.stats) {
      stats = target_side ? &target_stats(row) : &golden_stats(row);
      if (target_side && row.loss_scale_log2 != 0)
        stats = &out.derived.emplace_back(scale_stats(target_stats(row), row.loss_scale_log2));
    }
    out.records.push_back(MeasuredRecord{record, stats});
  }
  // Records of this side that found no partner still say where NaN/Inf appear (an op that exists only
  // in the target is often the one that overflows).
  for (const Record& r : target_side ? result.unmatched_target : result.unmatched_golden)
    if (r.stats) out.records.push_back(MeasuredRecord{&r, &*r.stats});
  return out;
}

Verdict overflow_verdict(const OverflowReport& report) {
  const bool found = !report.origins.empty() || report.grads_overflow || report.grads_underflow || !report.problems.empty();
  return found ? Verdict::kFail : Verdict::kPass;
}

}  // namespace parity
