// Curve readers: every supported format read from fixtures (tests/fixtures/curves/) or written here
// through the real writer (TensorBoard events via the generated protobuf classes), checked exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "curves/readers.h"
#include "parity/curves.h"
#include "src/curves/proto/tb_event.pb.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace parity::curves;

namespace {

fs::path fixture(const std::string& name) { return fs::path(PARITY_SOURCE_DIR) / "tests/fixtures/curves" / name; }

fs::path temp_dir(const std::string& name) {
  return parity_test::fresh_temp_dir(name);
}

double at(const CurveRun& run, const std::string& metric, int64_t step, int rank = -1) {
  const Series* s = run.find(metric, rank);
  if (!s) return -12345;
  for (size_t i = 0; i < s->steps.size(); ++i)
    if (s->steps[i] == step) return s->values[i];
  return -12345;
}

}  // namespace

TEST(CurveNames, Canonical) {
  EXPECT_EQ(canonical_metric("lm loss"), "loss");
  EXPECT_EQ(canonical_metric("train/loss"), "loss");
  EXPECT_EQ(canonical_metric("train_loss"), "loss");
  EXPECT_EQ(canonical_metric("grad norm"), "grad_norm");
  EXPECT_EQ(canonical_metric("learning rate"), "lr");
  EXPECT_EQ(canonical_metric("learning_rate"), "lr");
  EXPECT_EQ(canonical_metric("loss scale"), "loss_scale");
  EXPECT_EQ(canonical_metric("elapsed time per iteration (ms)"), "iter_time_ms");
  EXPECT_EQ(canonical_metric("eval_loss"), "eval_loss");
  EXPECT_EQ(canonical_metric("Train/Accuracy"), "accuracy");
}

TEST(CurveReaders, MegatronLog) {
  auto run = read_curves(fixture("megatron.log"));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->format, "text");
  EXPECT_DOUBLE_EQ(at(*run, "loss", 1), 10.8633);
  EXPECT_DOUBLE_EQ(at(*run, "loss", 4), 10.315);
  EXPECT_DOUBLE_EQ(at(*run, "lr", 2), 3.0e-6);
  EXPECT_DOUBLE_EQ(at(*run, "loss_scale", 3), 2147483648.0);
  EXPECT_DOUBLE_EQ(at(*run, "grad_norm", 2), 9.876);
  EXPECT_TRUE(std::isnan(at(*run, "grad_norm", 3)));
  EXPECT_DOUBLE_EQ(at(*run, "iter_time_ms", 1), 4123.4);
  EXPECT_DOUBLE_EQ(at(*run, "number_of_skipped_iterations", 3), 1.0);
  ASSERT_NE(run->find("loss"), nullptr);
  EXPECT_EQ(run->find("loss")->steps, (std::vector<int64_t>{1, 2, 3, 4}));
}

TEST(CurveReaders, DeepSpeedLog) {
  ReadOptions o;
  o.preset = "deepspeed";
  auto run = read_curves(fixture("deepspeed.log"), o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_DOUBLE_EQ(at(*run, "loss", 10, -1), 2.5);
  EXPECT_DOUBLE_EQ(at(*run, "loss", 20, -1), 2.25);
  EXPECT_DOUBLE_EQ(at(*run, "lr", 20, 0), 9.5e-05);  // from the "[Rank 0] step=20, ... lr=[9.5e-05]" line
  EXPECT_DOUBLE_EQ(at(*run, "samples/sec", 20), 64.257);
  EXPECT_EQ(run->find("logging.py"), nullptr) << "timestamp/source prefixes are not metrics";
}

TEST(CurveReaders, CustomRegex) {
  fs::path d = temp_dir("regex");
  std::ofstream(d / "train.log") << "epoch 0 it 7 -> loss=1.5 acc=0.25\nnoise\nepoch 0 it 8 -> loss=1.25 acc=0.5\n";
  ReadOptions o;
  o.regex = R"(it (\d+) -> loss=([0-9.]+) acc=([0-9.]+))";
  o.regex_fields = {"step", "loss", "accuracy"};
  auto run = read_curves(d / "train.log", o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_DOUBLE_EQ(at(*run, "loss", 8), 1.25);
  EXPECT_DOUBLE_EQ(at(*run, "accuracy", 7), 0.25);
  o.regex_fields = {"loss", "x", "y"};
  EXPECT_FALSE(read_curves(d / "train.log", o).ok()) << "no 'step' field";
}

TEST(CurveReaders, Csv) {
  auto run = read_curves(fixture("golden.csv"));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->format, "csv");
  EXPECT_EQ(run->find("loss")->steps, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(std::isnan(at(*run, "loss", 3)));
  EXPECT_DOUBLE_EQ(at(*run, "loss", 4), 4.5);
  EXPECT_EQ(run->find("grad_norm")->steps, (std::vector<int64_t>{0, 1, 3, 4})) << "empty cell skipped";
  EXPECT_DOUBLE_EQ(at(*run, "lr", 2), 0.001);
}

TEST(CurveReaders, JsonLinesWithRanksAndABadLine) {
  auto run = read_curves(fixture("run.jsonl"));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->ranks(), (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(at(*run, "loss", 1, 1), 5.25);
  EXPECT_TRUE(std::isnan(at(*run, "loss", 2, 1)));
  EXPECT_DOUBLE_EQ(at(*run, "tokens_per_sec", 2, 0), 1000);  // "train": {"tokens_per_sec"} flattened
  ASSERT_EQ(run->problems.size(), 1u);
  EXPECT_NE(run->problems[0].message().find("run.jsonl:5"), std::string::npos) << run->problems[0].message();
}

TEST(CurveReaders, HuggingFaceTrainerState) {
  auto run = read_curves(fixture("trainer_state.json"));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->format, "hf-trainer-state");
  EXPECT_EQ(run->find("loss")->steps, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_DOUBLE_EQ(at(*run, "loss", 30), 2.375) << "the summary entry's train_loss is not the step's loss";
  EXPECT_DOUBLE_EQ(at(*run, "eval_loss", 20), 2.625);
  EXPECT_DOUBLE_EQ(at(*run, "lr", 10), 4.9e-05);
  EXPECT_DOUBLE_EQ(at(*run, "grad_norm", 20), 2.5);
  // A checkpoint directory holding trainer_state.json is detected too.
  fs::path d = temp_dir("hf");
  fs::copy_file(fixture("trainer_state.json"), d / "trainer_state.json");
  auto dir = read_curves(d);
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_DOUBLE_EQ(at(*dir, "loss", 20), 2.5);
}

namespace {

std::string scalar_event(int64_t step, const std::string& tag, float value) {
  parity::tb::Event ev;
  ev.set_wall_time(1700000000.0 + step);
  ev.set_step(step);
  auto* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  return ev.SerializeAsString();
}

// TF2's tf.summary.scalar: a 0-d tensor with the scalars plugin metadata.
std::string tensor_event(int64_t step, const std::string& tag, double value) {
  parity::tb::Event ev;
  ev.set_step(step);
  auto* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("scalars");
  auto* t = v->mutable_tensor();
  t->set_dtype(parity::tb::DT_DOUBLE);
  t->add_double_val(value);
  return ev.SerializeAsString();
}

std::string half_event(int64_t step, const std::string& tag, uint16_t bf16_bits) {
  parity::tb::Event ev;
  ev.set_step(step);
  auto* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  auto* t = v->mutable_tensor();
  t->set_dtype(parity::tb::DT_BFLOAT16);
  t->add_half_val(bf16_bits);
  return ev.SerializeAsString();
}

}  // namespace

TEST(CurveReaders, TensorBoardEventsThroughProtobuf) {
  fs::path d = temp_dir("tb");
  {
    std::ofstream out(d / "events.out.tfevents.1700000000.host.123.0", std::ios::binary);
    parity::tb::Event version;
    version.set_file_version("brain.Event:2");
    out << detail::tfrecord_frame(version.SerializeAsString());
    out << detail::tfrecord_frame(scalar_event(0, "train/loss", 2.5f));
    out << detail::tfrecord_frame(scalar_event(1, "train/loss", 2.25f));
    out << detail::tfrecord_frame(tensor_event(1, "grad_norm", 0.123456789));
    out << detail::tfrecord_frame(half_event(2, "lr", 0x3F80));  // bf16 1.0
    out << detail::tfrecord_frame(scalar_event(2, "train/loss", std::nanf("")));
  }
  auto run = read_curves(d);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->format, "tensorboard");
  EXPECT_TRUE(run->problems.empty());
  EXPECT_DOUBLE_EQ(at(*run, "loss", 0), 2.5);
  EXPECT_DOUBLE_EQ(at(*run, "loss", 1), 2.25);
  EXPECT_TRUE(std::isnan(at(*run, "loss", 2)));
  EXPECT_DOUBLE_EQ(at(*run, "grad_norm", 1), 0.123456789);
  EXPECT_DOUBLE_EQ(at(*run, "lr", 2), 1.0);

  // A torn last record (process killed mid-write) and a flipped byte are reported; the rest is read.
  fs::path f = d / "events.out.tfevents.1700000000.host.123.0";
  std::string bytes;
  {
    std::ifstream in(f, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string torn = bytes + detail::tfrecord_frame(scalar_event(3, "train/loss", 2.0f)).substr(0, 20);
  std::ofstream(f, std::ios::binary | std::ios::trunc) << torn;
  auto run2 = read_curves(f);
  ASSERT_TRUE(run2.ok());
  ASSERT_EQ(run2->problems.size(), 1u);
  EXPECT_NE(run2->problems[0].message().find("torn record"), std::string::npos) << run2->problems[0].message();
  EXPECT_EQ(run2->find("loss")->steps.size(), 3u);

  std::string corrupt = bytes;
  corrupt[corrupt.size() - 6] ^= 0x40;  // inside the last record's data
  std::ofstream(f, std::ios::binary | std::ios::trunc) << corrupt;
  auto run3 = read_curves(f);
  ASSERT_TRUE(run3.ok());
  ASSERT_EQ(run3->problems.size(), 1u);
  EXPECT_NE(run3->problems[0].message().find("checksum"), std::string::npos);
  EXPECT_EQ(run3->find("loss")->steps.size(), 2u);
}

TEST(CurveReaders, TfRecordMaskedCrc) {
  // CRC32C("123456789") = 0xE3069283 (the Castagnoli check value); TensorFlow masks it as
  // ((crc >> 15) | (crc << 17)) + 0xa282ead8 (tensorflow/core/lib/hash/crc32c.h).
  const char* check = "123456789";
  const uint32_t crc = 0xE3069283u;
  EXPECT_EQ(detail::tfrecord_masked_crc(check, 9), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(CurveReaders, Errors) {
  EXPECT_EQ(read_curves("/nonexistent/x.csv").status().code(), parity::StatusCode::kNotFound);
  fs::path d = temp_dir("err");
  std::ofstream(d / "empty.log") << "nothing to see\n";
  auto r = read_curves(d / "empty.log");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("empty.log"), std::string::npos);
  std::ofstream(d / "state.json") << "{\"log_history\": 5}";
  EXPECT_FALSE(read_curves(d / "state.json").ok());
  ReadOptions o;
  o.format = "bogus";
  EXPECT_FALSE(read_curves(fixture("golden.csv"), o).ok());
}
