// write_compare_row_json (parity/compare_runs.h) writes a row's text directly; it must be, byte for
// byte, what nlohmann's dump(2) of the row's tree gives — the reference below is the tree the serializer
// built until it was replaced (commit 85ad354) — for rows with every field in play: NaN, infinities,
// -0.0, subnormals, extreme integers, missing metrics / statistics / update / checksum, empty shapes,
// and names with quotes, control characters, non-ASCII and invalid UTF-8.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "compare/judge.h"
#include "parity/analysis.h"
#include "parity/compare_runs.h"
#include "parity/json_number.h"

using namespace parity;
using nlohmann::json;

namespace {

json num(double v) { return json_number<json>(v); }

// The metrics' keys are the metric tables' (parity/metrics.h); the reference spells their values as the
// tree serializer did, through nlohmann.
json value(double v) { return num(v); }
json value(int64_t v) { return v; }
json value(bool v) { return v; }
json side_stats(const TensorStats& s) {
  json j = json::object();
  for (const TensorStatsField& f : kSideStatsFields) std::visit([&](auto member) { j[f.name] = value(s.*member); }, f.member);
  return j;
}
json value(const TensorStats& s) { return side_stats(s); }

json tensor_stats(const TensorStats& s) {
  return json{{"min", num(s.min)}, {"max", num(s.max)}, {"mean", num(s.mean)}, {"l2norm", num(s.l2norm)},
              {"absmax", num(s.absmax)}, {"nan_count", s.nan_count}, {"inf_count", s.inf_count},
              {"zero_count", s.zero_count}, {"subnormal_count", s.subnormal_count}, {"numel", s.numel}};
}

json metrics(const PairMetrics& m) {
  json j = json::object();
  for (const MetricField& f : kMetricFields) std::visit([&](auto member) { j[f.name] = value(m.*member); }, f.member);
  return j;
}

json stats_comparison(const CompareRow& row) {
  const StatsComparison& c = *row.stats;
  const TensorStats& g = c.golden_computed ? *c.golden_computed : *row.golden->stats;
  const TensorStats& t = c.target_computed ? *c.target_computed : *row.target->stats;
  const StatsDifferences s = compare::compare_stats(g, t);
  return json{{"golden", tensor_stats(g)}, {"target", tensor_stats(t)},
              {"max_diff", num(s.max_diff)}, {"min_diff", num(s.min_diff)}, {"mean_diff", num(s.mean_diff)},
              {"norm_diff", num(s.norm_diff)}, {"max_rel", num(s.max_rel)}, {"min_rel", num(s.min_rel)},
              {"mean_rel", num(s.mean_rel)}, {"norm_rel", num(s.norm_rel)}, {"worst_rel", num(s.worst_rel)}};
}

json reference_row(const CompareRow& row, const std::string& fixed_reason) {
  const Record& g = *row.golden;
  return json{{"name", g.name}, {"target_name", row.target->name}, {"target_order", row.target->order}, {"match", match_kind_name(row.match)},
              {"match_confidence", num(row.match_confidence)}, {"mode", compare_mode_name(row.mode)},
              {"golden", {{"dtype", dtype_name(g.dtype)}, {"shape", g.shape.vec()}, {"file", g.file}}},
              {"target", {{"dtype", dtype_name(row.target->dtype)}, {"shape", row.target->shape.vec()}, {"file", row.target->file}}},
              {"module", g.module}, {"op", g.op}, {"direction", g.direction}, {"role", g.role}, {"index", g.index},
              {"step", g.step}, {"rank", g.rank}, {"order", g.order}, {"shape_differs", row.shape_differs},
              {"event", event_name(g)},
              {"site", {{"module", event_site(g).module}, {"call", event_site(g).call}, {"op", event_site(g).op}}},
              {"loss_scale_log2", row.loss_scale_log2},
              {"cancelled", row.cancelled}, {"error_structured", row.error_structured},
              {"flip", flip_role_name(row.flip)},
              {"threshold_dtype", dtype_name(lower_precision(g.dtype, row.target->dtype))},
              {"metrics", row.metrics ? metrics(*row.metrics) : json(nullptr)},
              {"stats", row.stats ? stats_comparison(row) : json(nullptr)},
              {"checksum_equal", row.checksum_equal ? json(*row.checksum_equal) : json(nullptr)},
              {"update", row.update ? json{{"from_step", row.update->from_step}, {"rel_error", num(row.update->rel_error)},
                                           {"golden_norm", num(row.update->golden_norm)},
                                           {"grad_rel_error", num(row.update->grad_rel_error)},
                                           {"moved", row.update->moved}, {"stalled", row.update->stalled},
                                           {"lost", row.update->lost}, {"differs", row.update->differs}}
                                    : json(nullptr)},
              {"verdict", verdict_name(row.verdict)}, {"reason", row.reason},
              {"fixed_verdict", verdict_name(row.fixed_verdict)}, {"fixed_reason", fixed_reason},
              {"noise", noise_class_name(row.noise)}, {"noise_ratio", num(row.noise_ratio)}};
}

struct Random {
  std::mt19937_64 rng{2026};
  double d() {
    static const double special[] = {0.0, -0.0, 1.0, 0.1, 1e-7, 1e300, -1e-300, 5e-324, 123456789.0, 1.0 / 3.0,
                                     std::numeric_limits<double>::quiet_NaN(), INFINITY, -INFINITY, 1e21, 1e-5};
    if (rng() % 3 == 0) return special[rng() % std::size(special)];
    return std::ldexp(static_cast<double>(static_cast<int64_t>(rng())), static_cast<int>(rng() % 200) - 160);
  }
  int64_t i() {
    static const int64_t special[] = {0, -1, 1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    return rng() % 3 == 0 ? special[rng() % std::size(special)] : static_cast<int64_t>(rng() % 2000000) - 1000000;
  }
  bool b() { return rng() % 2; }
  std::string s() {
    static const char* special[] = {"", "layers.0.mlp/forward/output/0", "with \"quotes\" and \\", "tab\there\nnl",
                                    "\x01\x1f ctl", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "bad \xff\xfe utf8 \xc3",
                                    "/slash/and:colon", "\x7f del"};
    return special[rng() % std::size(special)];
  }
  void fill(double& v) { v = d(); }
  void fill(int64_t& v) { v = i(); }
  void fill(bool& v) { v = b(); }
  void fill(TensorStats& s) {
    for (const TensorStatsField& f : kSideStatsFields) std::visit([&](auto member) { fill(s.*member); }, f.member);
  }
  PairMetrics metrics() {  // every field of the metric table random
    PairMetrics m;
    for (const MetricField& f : kMetricFields) std::visit([&](auto member) { fill(m.*member); }, f.member);
    return m;
  }
  TensorStats tstats() {
    TensorStats s;
    s.min = d(); s.max = d(); s.mean = d(); s.l2norm = d(); s.absmax = d();
    s.nan_count = i(); s.inf_count = i(); s.zero_count = i(); s.subnormal_count = i(); s.numel = i();
    return s;
  }
};

}  // namespace

TEST(RowJson, TheDirectWriterSpellsRowsAsNlohmannDoes) {
  Random r;
  const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kI32, DType::kF64};
  for (int k = 0; k < 3000; ++k) {
    Record g, t;
    for (Record* rec : {&g, &t}) {
      rec->name = r.s(); rec->file = r.s(); rec->module = r.s(); rec->op = r.s();
      rec->direction = r.s(); rec->role = r.s();
      rec->dtype = dtypes[r.rng() % std::size(dtypes)];
      rec->index = static_cast<int>(r.i() % 100000);
      rec->step = r.i(); rec->rank = static_cast<int>(r.i() % 100000); rec->order = r.i();
      Shape shape;
      for (uint64_t n = r.rng() % 4; n > 0; --n) shape.push_back(r.i());
      rec->shape = shape;
    }
    CompareRow row;
    row.golden = &g;
    row.target = &t;
    row.match = static_cast<MatchKind>(r.rng() % 3);
    row.match_confidence = r.d();
    row.mode = static_cast<CompareMode>(r.rng() % 4);
    row.shape_differs = r.b();
    row.loss_scale_log2 = static_cast<int8_t>(r.rng() % 256);  // every value of the field, negative ones too
    if (r.b()) {
      row.metrics = r.metrics();
    }
    if (r.b()) {
      StatsComparison s;
      // A side's statistics are its record's, or computed from its data and held by the row.
      if (r.b()) s.golden_computed = r.tstats(); else g.stats = r.tstats();
      if (r.b()) s.target_computed = r.tstats(); else t.stats = r.tstats();
      row.stats = s;
    }
    if (r.b()) row.checksum_equal = r.b();
    row.cancelled = r.b();
    row.error_structured = r.b();
    row.flip = static_cast<FlipRole>(r.rng() % 3);
    if (r.b()) row.update = ParameterUpdate{r.i(), r.d(), r.d(), r.d(), r.i(), r.i(), r.i(), r.b()};
    row.fixed_verdict = static_cast<Verdict>(r.rng() % 4);
    row.verdict = static_cast<Verdict>(r.rng() % 4);
    // The fixed reason is a span of the final reason (CompareRow::fixed_reason), anywhere in it.
    const std::string before = r.s(), fixed = r.s();
    row.reason = before + fixed + r.s();
    row.fixed_reason_at = static_cast<uint32_t>(before.size());
    row.fixed_reason_size = static_cast<uint32_t>(fixed.size());
    row.noise = static_cast<NoiseClass>(r.rng() % 4);
    row.noise_ratio = r.d();

    const std::string want = json_text(reference_row(row, fixed), 2);
    std::string got;
    write_compare_row_json(row, got, "");
    ASSERT_EQ(got, want) << "row " << k;
    // In the document each line after the first sits four spaces in.
    std::string padded, want_padded;
    write_compare_row_json(row, padded, "    ");
    for (char c : want) {
      want_padded += c;
      if (c == '\n') want_padded += "    ";
    }
    ASSERT_EQ(padded, want_padded) << "row " << k;
  }
}
