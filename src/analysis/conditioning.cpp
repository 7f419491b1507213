// First-order propagation of an op's input difference to its output (src/analysis/conditioning.h).
#include "analysis/conditioning.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace parity::analysis_detail {

namespace {

enum class Model { kNone, kSoftmax, kLogSoftmax, kLayerNorm, kRmsNorm, kExp, kLog };

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

Model model_of(const std::string& op) {
  const std::string o = lower(op);
  if (o == "softmax" || o == "_softmax" || o == "softmax2d") return Model::kSoftmax;
  if (o == "log_softmax" || o == "_log_softmax" || o == "logsoftmax") return Model::kLogSoftmax;
  if (o == "layer_norm" || o == "layernorm") return Model::kLayerNorm;
  if (o == "rms_norm" || o == "rmsnorm" || o == "llamarmsnorm" || o == "t5layernorm") return Model::kRmsNorm;
  if (o == "exp") return Model::kExp;
  if (o == "log") return Model::kLog;
  return Model::kNone;
}

double dx_at(const std::vector<double>& xg, const std::vector<double>& xt, size_t i) {
  if (!std::isfinite(xg[i]) || !std::isfinite(xt[i])) return 0.0;  // masks: no difference to carry
  return xt[i] - xg[i];
}

// ‖dy‖² and ‖y‖² accumulated row by row.
struct Norms {
  double dy2 = 0, y2 = 0;
  std::optional<double> ratio() const {
    if (!(y2 > 0) || !std::isfinite(dy2) || !std::isfinite(y2)) return std::nullopt;
    return std::sqrt(dy2 / y2);
  }
};

void softmax_row(const double* xg, const std::vector<double>& x_golden, const std::vector<double>& x_target,
                 size_t base, int64_t n, bool log_softmax, Norms& acc) {
  double m = -INFINITY;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(xg[i])) m = std::max(m, xg[i]);
  if (!std::isfinite(m)) return;
  std::vector<double> p(static_cast<size_t>(n));
  double z = 0;
  for (int64_t i = 0; i < n; ++i) z += p[i] = std::isfinite(xg[i]) ? std::exp(xg[i] - m) : 0.0;
  double mean_dx = 0;  // ⟨p, dx⟩
  for (int64_t i = 0; i < n; ++i) {
    p[i] /= z;
    mean_dx += p[i] * dx_at(x_golden, x_target, base + i);
  }
  for (int64_t i = 0; i < n; ++i) {
    const double d = dx_at(x_golden, x_target, base + i) - mean_dx;
    if (log_softmax) {
      if (p[i] == 0) continue;  // log of a masked position: -inf on both sides
      acc.dy2 += d * d;
      const double y = std::log(p[i]);
      acc.y2 += y * y;
    } else {
      acc.dy2 += (p[i] * d) * (p[i] * d);
      acc.y2 += p[i] * p[i];
    }
  }
}

void norm_row(const double* xg, const std::vector<double>& x_golden, const std::vector<double>& x_target, size_t base,
              int64_t n, bool centre, Norms& acc) {
  double mu = 0;
  if (centre) {
    for (int64_t i = 0; i < n; ++i) mu += xg[i];
    mu /= static_cast<double>(n);
  }
  double var = 0, mean_dx = 0;
  for (int64_t i = 0; i < n; ++i) {
    var += (xg[i] - mu) * (xg[i] - mu);
    if (centre) mean_dx += dx_at(x_golden, x_target, base + i);
  }
  var /= static_cast<double>(n);
  mean_dx /= static_cast<double>(n);
  const double sigma = std::sqrt(var);
  if (!(sigma > 0)) return;
  double zd = 0;  // mean(z ⊙ (dx − mean dx))
  for (int64_t i = 0; i < n; ++i) zd += (xg[i] - mu) / sigma * (dx_at(x_golden, x_target, base + i) - mean_dx);
  zd /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    const double z = (xg[i] - mu) / sigma;
    const double dz = (dx_at(x_golden, x_target, base + i) - mean_dx - z * zd) / sigma;
    acc.dy2 += dz * dz;
    acc.y2 += z * z;
  }
}

}  // namespace

bool has_conditioning_model(const std::string& op) { return model_of(op) != Model::kNone; }

std::optional<double> propagated_relative_error(const std::string& op, const std::vector<double>& x_golden,
                                                const std::vector<double>& x_target,
                                                const std::vector<double>& y_golden, int64_t last_dim) {
  const Model model = model_of(op);
  const size_t size = x_golden.size();
  if (model == Model::kNone || size == 0 || x_target.size() != size || last_dim <= 0 ||
      size % static_cast<size_t>(last_dim) != 0)
    return std::nullopt;
  Norms acc;
  switch (model) {
    case Model::kSoftmax:
    case Model::kLogSoftmax:
    case Model::kLayerNorm:
    case Model::kRmsNorm:
      for (size_t base = 0; base < size; base += static_cast<size_t>(last_dim)) {
        const double* row = x_golden.data() + base;
        if (model == Model::kSoftmax || model == Model::kLogSoftmax) {
          softmax_row(row, x_golden, x_target, base, last_dim, model == Model::kLogSoftmax, acc);
        } else {
          norm_row(row, x_golden, x_target, base, last_dim, model == Model::kLayerNorm, acc);
        }
      }
      break;
    case Model::kExp:
    case Model::kLog:
      if (y_golden.size() != size) return std::nullopt;
      for (size_t i = 0; i < size; ++i) {
        const double d = dx_at(x_golden, x_target, i);
        const double dy = model == Model::kExp ? y_golden[i] * d : (x_golden[i] != 0 ? d / x_golden[i] : 0.0);
        if (!std::isfinite(dy) || !std::isfinite(y_golden[i])) continue;
        acc.dy2 += dy * dy;
        acc.y2 += y_golden[i] * y_golden[i];
      }
      break;
    case Model::kNone:
      break;
  }
  return acc.ratio();
}

}  // namespace parity::analysis_detail
