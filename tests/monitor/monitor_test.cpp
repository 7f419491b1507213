// tests/monitor/monitor_test.cpp — `parity monitor` (parity/monitor.h, docs/monitor.md) on statistics-only runs
// written by parity's own dump writer: each check finds its anomaly at its step and tensor, once per tensor
// with the steps that show it, and a healthy run is quiet.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../temp_dir.h"
#include "parity/dump.h"
#include "parity/monitor.h"

namespace parity::monitor {
namespace {

TensorStats stats(double l2norm, int64_t numel, int64_t zeros = 0, double max = 0) {
  TensorStats s;
  s.min = 0, s.max = max, s.mean = 0, s.absmax = max, s.l2norm = l2norm;
  s.numel = numel, s.nan_count = 0, s.inf_count = 0, s.zero_count = zeros, s.subnormal_count = 0;
  return s;
}

void add(dump::DumpWriter& w, const std::string& name, const std::string& module, const std::string& dir,
         const std::string& role, int64_t step, const TensorStats& s, DType dtype = DType::kF32) {
  dump::EventMeta m;
  m.name = name, m.module = module, m.op = "Linear", m.direction = dir, m.role = role, m.index = 0, m.step = step;
  m.dtype = dtype;
  m.shape = {s.numel};
  m.stats = s;
  ASSERT_TRUE(w.append_event(m, dump::Buffer{}).ok());
}

// `steps` steps of one bf16 parameter under AdamW: its weight, update, exp_avg_sq and the lr (0 at step 0,
// the warmup's), and a logged loss. `stagnant_from`: the update leaves 80 of 100 elements in place from
// that step on; `explode_at`: exp_avg_sq's norm jumps 5000x there; `spike_at`: the loss jumps there.
std::filesystem::path write_run(const std::filesystem::path& dir, int steps, int stagnant_from, int explode_at, int spike_at) {
  dump::WriterOptions o;
  auto w = dump::DumpWriter::create(dir, o);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  for (int k = 0; k < steps; ++k) {
    add(**w, "m/forward/parameter/weight", "m", "forward", "parameter", k, stats(10, 100), DType::kBF16);
    add(**w, "m/optimizer/update/weight", "m", "optimizer", "update", k, stats(k == 0 ? 0 : 0.01, 100, k >= stagnant_from ? 80 : 0));
    add(**w, "m/optimizer/exp_avg_sq/weight", "m", "optimizer", "exp_avg_sq", k, stats(k == explode_at ? 5000.0 : 1.0, 100));
    add(**w, "<global>/optimizer/lr/group0", "<global>", "optimizer", "lr", k, stats(0, 1, 0, k == 0 ? 0.0 : 1e-3));
    const double loss = 5.0 - 0.05 * k + 0.01 * ((k * 7) % 3) + (k == spike_at ? 4.0 : 0.0);
    EXPECT_TRUE((*w)->append_scalars(k, nlohmann::json{{"loss", loss}}.dump()).ok());
  }
  EXPECT_TRUE((*w)->close().ok());
  return dir;
}

std::vector<std::string> codes(const MonitorReport& r) {
  std::vector<std::string> out;
  for (const Anomaly& a : r.anomalies) out.push_back(a.code + "@" + std::to_string(a.step) + ":" + a.tensor);
  return out;
}

TEST(Monitor, AHealthyRunIsQuiet) {
  parity_test::TempDir dir;
  auto r = monitor_run(write_run(dir.path() / "run", 30, 1000, -1, -1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(codes(*r), std::vector<std::string>{});
  EXPECT_EQ(r->steps, 30);
  EXPECT_FALSE(monitor_found_trouble(*r));
  const auto j = nlohmann::json::parse(monitor_json(*r));
  EXPECT_EQ(j["schema"], "parity.monitor/1");
  EXPECT_EQ(j["verdict"], "pass");
}

TEST(Monitor, EachCheckFindsItsStepAndTensorOnce) {
  parity_test::TempDir dir;
  auto r = monitor_run(write_run(dir.path() / "run", 30, 5, 12, 22));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(codes(*r), (std::vector<std::string>{"STAGNATION@5:m/weight", "MOMENT_EXPLODES@12:m/weight/exp_avg_sq",
                                                 "LOSS_SPIKE@22:loss"}));
  const Anomaly& stagnant = r->anomalies[0];
  EXPECT_EQ(stagnant.steps, 25);  // steps 5..29
  EXPECT_NE(stagnant.evidence.find("80 of 100 elements did not move at step 5"), std::string::npos) << stagnant.evidence;
  EXPECT_NE(stagnant.evidence.find("bf16"), std::string::npos);
  EXPECT_TRUE(monitor_found_trouble(*r));
}

TEST(Monitor, NoUpdateIsJudgedWithoutALearningRate) {
  // Step 0's lr is 0 (the warmup): an update that moves nothing there is no stagnation.
  parity_test::TempDir dir;
  auto r = monitor_run(write_run(dir.path() / "run", 8, 0, -1, -1));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->anomalies.size(), 1u);
  EXPECT_EQ(r->anomalies[0].step, 1);
}

}  // namespace
}  // namespace parity::monitor
