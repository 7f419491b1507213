// JSON form of parity.overflow/1 (docs/diagnosis.md "JSON"). The findings' keys of parity.compare/1
// are written by the compare serializer (src/pipeline/compare_json.cpp).
#include <cmath>

#include "parity/diagnosis.h"
#include "parity/json_number.h"
#include "parity/schemas.h"

namespace parity {
namespace {

using nlohmann::json;


json range_json(const ValueRange& r) {
  return {{"name", r.name}, {"role", r.role}, {"dtype", dtype_name(r.dtype)}, {"min", json_number<json>(r.min)},
          {"max", json_number<json>(r.max)}, {"absmax", json_number<json>(r.absmax)}, {"numel", r.numel}, {"nan", r.nan_count},
          {"inf", r.inf_count}};
}

}  // namespace

json overflow_to_json(const OverflowReport& r) {
  json origins = json::array();
  for (const NanOrigin& o : r.origins) {
    json in = json::array(), out = json::array();
    for (const ValueRange& v : o.inputs) in.push_back(range_json(v));
    for (const ValueRange& v : o.outputs) out.push_back(range_json(v));
    origins.push_back({{"event", o.event}, {"module", o.module}, {"op", o.op}, {"direction", o.direction},
                       {"step", o.step}, {"rank", o.rank}, {"order", o.order}, {"inputs", in}, {"outputs", out},
                       {"contaminated", o.contaminated}, {"gradient", o.role_is_grad},
                       {"explanation", o.explanation}});
  }
  json near = json::array();
  for (const NearOverflow& n : r.near_overflow)
    near.push_back({{"name", n.name}, {"event", n.event}, {"direction", n.direction}, {"step", n.step},
                    {"rank", n.rank}, {"dtype", dtype_name(n.dtype)}, {"absmax", json_number<json>(n.absmax)},
                    {"limit", json_number<json>(n.limit)}});
  json under = json::array();
  for (const GradUnderflow& g : r.grad_underflow)
    under.push_back({{"name", g.name}, {"module", g.module}, {"step", g.step}, {"rank", g.rank},
                     {"dtype", dtype_name(g.dtype)}, {"numel", g.numel}, {"zero_fraction", json_number<json>(g.zero_fraction)},
                     {"subnormal_fraction", json_number<json>(g.subnormal_fraction)}, {"underflowing", g.underflowing}});
  json problems = json::array();
  for (const Status& st : r.problems) problems.push_back({{"code", status_code_name(st.code())}, {"message", st.message()}});
  return {{"schema", schemas::kOverflow.id},
          {"source", r.source},
          {"records", r.records},
          {"measured", r.measured},
          {"nonfinite_records", r.nonfinite_records},
          {"origins", origins},
          {"near_overflow", near},
          {"grad_underflow", under},
          {"grads_overflow", r.grads_overflow},
          {"grads_underflow", r.grads_underflow},
          {"loss_scale_advice", r.loss_scale_advice.empty() ? json(nullptr) : json(r.loss_scale_advice)},
          {"problems", problems}};
}

}  // namespace parity

namespace parity {
namespace {

json crossing_json(const TimelineCrossing& c) {
  return {{"name", c.name},   {"module", c.module}, {"phase", c.phase},
          {"role", c.role},   {"step", c.step},     {"rank", c.rank},
          {"row", c.row},     {"ratio", json_number<json>(c.ratio)}, {"bound", json_number<json>(c.bound)}};
}

json numbers_json(const std::vector<double>& values) {
  json out = json::array();
  for (double v : values) out.push_back(json_number<json>(v));
  return out;
}

}  // namespace

json timeline_to_json(const DivergenceTimeline& t) {
  json phases = json::array(), modules = json::array(), tensors = json::array();
  for (const TimelineCrossing& c : t.phase_first) phases.push_back(crossing_json(c));
  for (const TimelineModule& m : t.modules)
    modules.push_back({{"module", m.module}, {"rank", m.rank},
                       {"first_crossing", m.first_crossing < 0 ? json(nullptr) : json(m.first_crossing)},
                       {"of_bound", numbers_json(m.of_bound)}});
  for (const TimelineTensor& x : t.tensors)
    tensors.push_back({{"name", x.name}, {"phase", x.phase}, {"rank", x.rank}, {"steps", x.steps},
                       {"first_crossing", x.first_crossing < 0 ? json(nullptr) : json(x.first_crossing)},
                       {"worst_of_bound", json_number<json>(x.worst_of_bound)}, {"worst_step", x.worst_step},
                       {"growth", json_number<json>(x.growth)}});
  return {{"steps", t.steps},
          {"per_step_limit", t.per_step_limit},
          {"first", t.first ? crossing_json(*t.first) : json(nullptr)},
          {"cause", t.cause.empty() ? json(nullptr) : json(t.cause)},
          {"cause_text", t.cause_text},
          {"config_keys", t.config_keys},
          {"phases", phases},
          {"median_growth", json_number<json>(t.median_growth)},
          {"modules", modules},
          {"tensors", tensors}};
}

}  // namespace parity
