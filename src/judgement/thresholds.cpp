// Default thresholds per dtype, the thresholds-file overlay and the JSON form.
// Every value is cited in docs/thresholds.md; the comments below say where each one comes from.
#include "parity/thresholds.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "parity/json_depth.h"
#include "parity/json_number.h"
#include <sstream>

#include "fmt/format.h"

namespace parity {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The fields of DTypeThresholds in one table, so that loading, printing and validation cannot
// disagree about their names. `unit` says which values are legal (a cosine is in [-1, 1]).
enum class FieldKind { kCosine, kNonNegative };
struct Field {
  const char* name;
  double DTypeThresholds::*member;
  FieldKind kind;
};
constexpr Field kFields[] = {
    {"cosine_pass", &DTypeThresholds::cosine_pass, FieldKind::kCosine},
    {"cosine_fail", &DTypeThresholds::cosine_fail, FieldKind::kCosine},
    {"cosine_hard_fail", &DTypeThresholds::cosine_hard_fail, FieldKind::kCosine},
    {"fail_min_abs", &DTypeThresholds::fail_min_abs, FieldKind::kNonNegative},
    {"kl_pass", &DTypeThresholds::kl_pass, FieldKind::kNonNegative},
    {"max_abs_fail", &DTypeThresholds::max_abs_fail, FieldKind::kNonNegative},
    {"max_rel_warn", &DTypeThresholds::max_rel_warn, FieldKind::kNonNegative},
    {"rel_l2_warn", &DTypeThresholds::rel_l2_warn, FieldKind::kNonNegative},
    {"stats_rel_warn", &DTypeThresholds::stats_rel_warn, FieldKind::kNonNegative},
};

// msprobe's judgement and the seed documents' pass references, for formats whose rounding is far
// below the thresholds (fp32, fp64, integers): DTypeThresholds' own member values (parity/thresholds.h).
DTypeThresholds high_precision() { return DTypeThresholds{}; }

}  // namespace

Thresholds default_thresholds() {
  Thresholds th;
  const DTypeThresholds hp = high_precision();
  th.fallback = hp;
  th.by_dtype["f32"] = hp;

  DTypeThresholds f16 = hp;
  f16.kl_pass = 1e-4;         // seed 000: KL < 0.0001 for fp16
  th.by_dtype["f16"] = f16;   // max_abs_fail stays 1: fp16's half-ULP reaches 1 only above 2048

  DTypeThresholds bf16 = hp;
  bf16.kl_pass = 0.005;       // seed 000: KL < 0.005 for bf16
  // bf16 keeps fp32's exponent range with an 8-bit significand: the half-ULP of a correctly rounded
  // value reaches 1 at |x| ≥ 256, so msprobe's absolute "MaxAbsErr > 1" rule would fail a perfect cast
  // of large activations. The cosine and relative rules carry the judgement instead.
  bf16.max_abs_fail = kInf;
  th.by_dtype["bf16"] = bf16;

  // fp8: one correctly rounded cast alone has a relative L2 error of about u/√3 (u = 2^-4 for e4m3,
  // 2^-3 for e5m2): ≈ 0.036 (cosine ≈ 0.99935) and ≈ 0.072 (cosine ≈ 0.9974). The seed's 0.999 leaves
  // no room for e5m2 at all, so the fp8 bounds are set at ≈ 2.8 casts' error for pass and ≈ 4 casts'
  // for fail (docs/thresholds.md, "fp8").
  DTypeThresholds e4m3 = hp;
  e4m3.cosine_pass = 0.995;   // rel_l2 ≈ 0.1
  e4m3.cosine_fail = 0.99;    // rel_l2 ≈ 0.14
  e4m3.kl_pass = 0.005;       // no fp8 figure in the sources: bf16's, the loosest sourced value
  e4m3.max_abs_fail = kInf;   // half-ULP of e4m3 reaches 1 at |x| ≥ 16
  e4m3.rel_l2_warn = 0.1;
  th.by_dtype["f8_e4m3"] = e4m3;

  DTypeThresholds e5m2 = hp;
  e5m2.cosine_pass = 0.98;    // rel_l2 ≈ 0.2
  e5m2.cosine_fail = 0.95;    // rel_l2 ≈ 0.32
  e5m2.kl_pass = 0.005;
  e5m2.max_abs_fail = kInf;   // half-ULP of e5m2 reaches 1 at |x| ≥ 8
  e5m2.rel_l2_warn = 0.2;
  th.by_dtype["f8_e5m2"] = e5m2;
  return th;
}

const char* verdict_policy_name(VerdictPolicy p) {
  return p == VerdictPolicy::kFixedThresholds ? "fixed-thresholds" : "noise-model";
}

std::optional<VerdictPolicy> verdict_policy_from_name(const std::string& name) {
  if (name == "noise-model") return VerdictPolicy::kNoiseModel;
  if (name == "fixed-thresholds") return VerdictPolicy::kFixedThresholds;
  return std::nullopt;
}

const DTypeThresholds& Thresholds::for_dtype(DType t) const {
  auto it = by_dtype.find(dtype_name(t));
  return it == by_dtype.end() ? fallback : it->second;
}

DType lower_precision(DType a, DType b) {
  // An integer side carries no rounding of its own: the float side decides. Among floats the larger
  // unit roundoff is the lower precision (bf16 2^-8 is lower than fp16 2^-11).
  const FloatFormat* fa = float_format(a);
  const FloatFormat* fb = float_format(b);
  if (fa == nullptr) return fb == nullptr ? a : b;
  if (fb == nullptr) return a;
  return fb->unit_roundoff > fa->unit_roundoff ? b : a;
}

namespace {


nlohmann::ordered_json entry_json(const DTypeThresholds& d) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const Field& f : kFields) j[f.name] = json_number<nlohmann::ordered_json>(d.*(f.member));
  return j;
}

// A threshold value from a thresholds file: a number, or "Infinity"/"inf" to switch a rule off.
Result<double> parse_value(const nlohmann::json& v, const std::string& where) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "Infinity" || s == "inf" || s == "+inf" || s == "infinity") return kInf;
    if (s == "-Infinity" || s == "-inf" || s == "-infinity") return -kInf;
  }
  return Status::Invalid(where + ": expected a number or \"Infinity\", got " + v.dump());
}

// The legal range of a field's value; `raw` is the value as the user wrote it, for the message.
Status check_value(const Field& field, double v, const std::string& at, const std::string& raw) {
  if (field.kind == FieldKind::kCosine && !(v >= -1.0 && v <= 1.0))
    return Status::Invalid(at + ": a cosine bound must lie in [-1, 1], got " + raw);
  if (field.kind == FieldKind::kNonNegative && !(v >= 0.0)) return Status::Invalid(at + ": must be >= 0, got " + raw);
  return Status::OK();
}

Status apply_entry(const nlohmann::json& obj, DTypeThresholds& d, const std::string& where) {
  if (!obj.is_object()) {
    return Status::Invalid(where + ": expected an object of thresholds, got " + obj.dump());
  }
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const Field* field = nullptr;
    for (const Field& f : kFields) {
      if (it.key() == f.name) field = &f;
    }
    const std::string at = where + "." + it.key();
    if (field == nullptr) {
      std::string known;
      for (const Field& f : kFields) known += std::string(known.empty() ? "" : ", ") + f.name;
      return Status::Invalid(at + ": unknown threshold (known: " + known + ")");
    }
    PARITY_ASSIGN_OR_RETURN(double v, parse_value(it.value(), at));
    PARITY_RETURN_NOT_OK(check_value(*field, v, at, it.value().dump()));
    d.*(field->member) = v;
  }
  return Status::OK();
}

const Field* find_field(std::string_view name) {
  for (const Field& f : kFields)
    if (name == f.name) return &f;
  return nullptr;
}

// "--cosine: all.cosine_pass: ..." — the words a thresholds file's {"all": {...}} gets, so a flag and the
// same value in a file are refused alike.
Status apply_override(const ThresholdOverride& o, Thresholds& th) {
  const Field* field = find_field(o.field);
  if (field == nullptr) return Status::Invalid(o.origin + ": unknown threshold " + o.field);
  const std::string at = o.origin + ": all." + o.field;
  PARITY_RETURN_NOT_OK(check_value(*field, o.value, at, fmt::format("{}", o.value)));
  for (auto& [name, entry] : th.by_dtype) entry.*(field->member) = o.value;
  th.fallback.*(field->member) = o.value;
  return Status::OK();
}

std::string value_text(double v) { return std::isinf(v) ? "off" : fmt::format("{}", v); }

}  // namespace

Status apply_thresholds_json(const std::string& text, const std::string& origin, Thresholds& th) {
  if (const std::string deep = json_depth_problem(text); !deep.empty()) return Status::Invalid(origin + ": " + deep);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::Invalid(origin + ": not valid JSON");
  if (!doc.is_object()) return Status::Invalid(origin + ": expected a JSON object keyed by dtype");
  // "all" first, so that a file can set a bound everywhere and then refine one dtype.
  if (doc.contains("all")) {
    for (auto& [name, entry] : th.by_dtype) {
      PARITY_RETURN_NOT_OK(apply_entry(doc["all"], entry, origin + ": all"));
    }
    PARITY_RETURN_NOT_OK(apply_entry(doc["all"], th.fallback, origin + ": all"));
  }
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& key = it.key();
    if (key == "all" || key == "schema") continue;
    if (key == "policy") {
      const std::optional<VerdictPolicy> p =
          it.value().is_string() ? verdict_policy_from_name(it.value().get<std::string>()) : std::nullopt;
      if (!p) {
        return Status::Invalid(origin + ": policy: expected \"noise-model\" or \"fixed-thresholds\", got " +
                               it.value().dump());
      }
      th.policy = *p;
      continue;
    }
    if (key == "default") {
      PARITY_RETURN_NOT_OK(apply_entry(it.value(), th.fallback, origin + ": default"));
      continue;
    }
    std::optional<DType> dt = dtype_from_name(key);
    if (!dt) {
      return Status::Invalid(origin + ": unknown dtype key \"" + key +
                             "\" (use f32, f16, bf16, f8_e4m3, f8_e5m2, ..., \"default\" or \"all\")");
    }
    const std::string canonical = dtype_name(*dt);
    // A dtype without its own entry starts from the fallback, then takes the file's values.
    auto [slot, inserted] = th.by_dtype.try_emplace(canonical, th.fallback);
    PARITY_RETURN_NOT_OK(apply_entry(it.value(), slot->second, origin + ": " + key));
  }
  return Status::OK();
}

Result<Thresholds> load_thresholds(const std::string& path, Thresholds base) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError(path + ": cannot open thresholds file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IOError(path + ": error reading thresholds file");
  PARITY_RETURN_NOT_OK(apply_thresholds_json(text.str(), path, base));
  return base;
}

Result<Thresholds> resolve_thresholds(const ThresholdSources& sources) {
  Thresholds th = default_thresholds();
  if (!sources.file.empty()) {
    PARITY_ASSIGN_OR_RETURN(th, load_thresholds(sources.file, std::move(th)));
  }
  for (const ThresholdOverride& o : sources.overrides) PARITY_RETURN_NOT_OK(apply_override(o, th));
  if (sources.policy) th.policy = *sources.policy;
  return th;
}

std::string threshold_default_text(std::string_view name) {
  const Field* field = find_field(name);
  if (field == nullptr) return "";
  const Thresholds th = default_thresholds();
  const double base = th.fallback.*(field->member);
  std::string text = value_text(base), others;
  for (const auto& [dtype, entry] : th.by_dtype) {
    const double v = entry.*(field->member);
    if (v != base) others += fmt::format("{}{} {}", others.empty() ? "" : ", ", dtype, value_text(v));
  }
  return others.empty() ? text : text + "; " + others;
}

std::string thresholds_to_json(const Thresholds& t) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["policy"] = verdict_policy_name(t.policy);
  j["default"] = entry_json(t.fallback);
  for (const auto& [name, entry] : t.by_dtype) j[name] = entry_json(entry);
  return json_text(j, 2);
}

}  // namespace parity
