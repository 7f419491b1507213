// parity/monitor.h — `parity monitor RUN`: trouble in one training run, without a golden (issue 30 §3,
// docs/monitor.md). From what the capture recorded — its logged scalars (loss, grad_norm), the statistics
// of parameters, optimizer states and updates (docs/capture.md "Optimizer states") — each anomaly with its
// step, its tensor and the evidence:
//   LOSS_SPIKE, GRAD_NORM_SPIKE   a logged value above its trailing median by k robust deviations
//                                 (curves::find_spikes: median + k · 1.4826 · MAD of the last `window`)
//                                 and by more than `spike_rel` of the median (a few quiet steps make the
//                                 MAD tiny: a 15 % bump of a warmup's gradient norm is no spike)
//   UPDATE_RATIO_HIGH / _LOW      ‖Δw‖ / ‖w‖ of a step outside [ratio_low, ratio_high] while the lr is > 0
//   STAGNATION                    a parameter whose update is exactly 0 on more than `stagnant_fraction` of
//                                 its elements while the lr is > 0: updates below half an ulp of a low-precision
//                                 weight (seed 004 §1.2), or a parameter the optimizer does not step
//   MOMENT_EXPLODES / _VANISHES   an optimizer state whose L2 norm grows by more than `moment_jump` in one
//                                 step, or falls to 0 after being nonzero
//   NAN_INF                       where NaN/Inf are born (the overflow analysis, parity overflow)
//   RANK_INCONSISTENT             ranks that log different values of one scalar (curves::compare_ranks)
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "parity/status.h"

namespace parity::monitor {

struct MonitorOptions {
  int spike_window = 20;
  double spike_k = 6.0;
  double spike_rel = 0.25;
  double ratio_high = 1e-1, ratio_low = 1e-8;
  double stagnant_fraction = 0.5;
  double moment_jump = 1e3;
};

struct Anomaly {
  std::string code;    // LOSS_SPIKE, ... (above)
  int64_t step = -1;   // the first step it is seen
  int rank = -1;
  std::string tensor;  // the record or scalar it is about
  int64_t steps = 1;   // how many steps show it (one anomaly per tensor and code)
  std::string evidence;
};

struct MonitorReport {
  std::string run;
  int64_t records = 0, steps = 0;
  std::vector<std::string> scalars;   // the logged scalars looked at
  std::vector<Anomaly> anomalies;     // by first step, then code
  std::vector<Status> problems;       // parts of the run that could not be read
};

Result<MonitorReport> monitor_run(const std::filesystem::path& run, const MonitorOptions& options = {});

std::string monitor_json(const MonitorReport& report, int indent = 2);  // schemas::kMonitor
std::string monitor_text(const MonitorReport& report, bool color);
// fail when an anomaly is found or a part of the run is unreadable, else pass.
bool monitor_found_trouble(const MonitorReport& report);

}  // namespace parity::monitor
