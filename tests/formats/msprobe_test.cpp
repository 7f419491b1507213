// The restricted .pt reader and the msprobe dump.json reader through their byte-level entry points
// (read_torch_pt, parse_msprobe_dump_json; the ones fuzz harnesses call) and as sources, on files written
// by the real writers: tests/fixtures/torch_pt/*.pt by torch.save (torch 2.15, make.py beside them) and
// tests/fixtures/msprobe/statistics_mix by mindstudio-probe 26.2.0 (PrecisionDebugger, statistics, mix).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "formats/test_util.h"
#include "parity/formats.h"
#include "parity/open_source.h"

namespace {

using namespace parity_test;
namespace pf = parity::formats;

const fs::path kFixtures = fs::path(PARITY_SOURCE_DIR) / "tests" / "fixtures";

parity::Result<pf::PtTensor> read_pt(const std::string& bytes) {
  return pf::read_torch_pt(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
}

TEST(TorchPt, ReadsWhatTorchSaveWrote) {
  struct Case {
    const char* file;
    parity::DType dtype;
    std::vector<int64_t> shape;
    std::vector<double> values;
  };
  const std::vector<Case> cases = {
      {"f32_2x3.pt", parity::DType::kF32, {2, 3}, {0, 1, 2, 3, 4, 5}},
      {"bf16_2x3.pt", parity::DType::kBF16, {2, 3}, {0, 1, 2, 3, 4, 5}},
      {"f8e4m3_2x3.pt", parity::DType::kF8E4M3, {2, 3}, {0, 1, 2, 3, 4, 5}},
      {"param_transposed_3x2.pt", parity::DType::kF32, {3, 2}, {0, 3, 1, 4, 2, 5}},
      {"i64_offset_3.pt", parity::DType::kI64, {3}, {4, 5, 6}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    auto src = parity::open_source(kFixtures / "torch_pt" / c.file);
    ASSERT_TRUE(src.ok()) << src.status().message();
    ASSERT_EQ((*src)->records().size(), 1u);
    const parity::Record& r = (*src)->records()[0];
    EXPECT_EQ(r.dtype, c.dtype);
    EXPECT_EQ(r.shape, c.shape);
    EXPECT_EQ(load_values(**src, r.name), c.values);
  }
}

TEST(TorchPt, EveryTruncationAndEveryByteFlipIsAnErrorOrATensorNeverACrash) {
  for (const char* f : {"f32_2x3.pt", "f8e4m3_2x3.pt", "param_transposed_3x2.pt"}) {
    const std::string bytes = read_file(kFixtures / "torch_pt" / f);
    for (size_t cut = 0; cut < bytes.size(); ++cut) EXPECT_FALSE(read_pt(bytes.substr(0, cut)).ok()) << f << " " << cut;
    for (size_t i = 0; i < bytes.size(); ++i) {
      std::string m = bytes;
      m[i] = static_cast<char>(m[i] ^ 0x5a);
      auto r = read_pt(m);
      if (r.ok()) {  // a flip inside the data or an ignored member: what it reads must still fit the file
        EXPECT_LE(r->data_offset + r->data_bytes, m.size()) << f << " " << i;
      }
    }
  }
}

TEST(TorchPt, ForeignGlobalsAndOpcodesAreRefusedByName) {
  std::string bytes = read_file(kFixtures / "torch_pt" / "f32_2x3.pt");
  // Same length, so the zip directory stays valid: the pickle now names another callable.
  const std::string from = "torch._utils\n_rebuild_tensor_v2", to = "os          \nsystem            ";
  ASSERT_EQ(from.size(), to.size());
  const size_t at = bytes.find(from);
  ASSERT_NE(at, std::string::npos);
  std::string evil = bytes;
  evil.replace(at, from.size(), to);
  auto r = read_pt(evil);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.status().message(), "global 'os          .system            '")) << r.status().message();
  EXPECT_TRUE(contains(r.status().message(), "refused"));
  // The PROTO opcode replaced by EMPTY_DICT ('}'), which torch never writes for a tensor.
  const size_t pkl = bytes.find("\x80\x02" "ctorch._utils");
  ASSERT_NE(pkl, std::string::npos);
  std::string dict = bytes;
  dict[pkl] = '}';
  r = read_pt(dict);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.status().message(), "pickle opcode 0x7d ('}') at byte 0")) << r.status().message();
}

TEST(MsprobeJson, RealStatisticsMixDumpMapsToParityNames) {
  const fs::path dir = kFixtures / "msprobe" / "statistics_mix";
  auto dump = pf::parse_msprobe_dump_json(read_file(dir / "dump.json"), read_file(dir / "construct.json"), "dump.json");
  ASSERT_TRUE(dump.ok()) << dump.status().message();
  EXPECT_EQ(dump->task, "statistics");
  EXPECT_EQ(dump->level, "mix");
  EXPECT_TRUE(dump->problems.empty());
  auto find = [&](const std::string& name) -> const pf::MsprobeTensor* {
    for (const auto& t : dump->tensors) {
      if (t.name == name) return &t;
    }
    return nullptr;
  };
  const pf::MsprobeTensor* in = find("layers.0/forward/input/0");
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->msprobe_name, "Module.layers.0.Linear.forward.0.input.0");
  EXPECT_EQ(in->module, "layers.0");
  EXPECT_EQ(in->op, "Linear");
  EXPECT_EQ(in->shape, (std::vector<int64_t>{4, 8}));
  ASSERT_TRUE(in->stats.has_value());
  EXPECT_DOUBLE_EQ(in->stats->max, 1.1646006107330322);
  EXPECT_DOUBLE_EQ(in->stats->l2norm, 3.8209519386291504);
  // F.linear inside layers.1: construct.json names the parent; k counts within that parent.
  const pf::MsprobeTensor* op = find("layers.1/linear#0/forward/output/0");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->msprobe_name, "Functional.linear.1.forward.output.0");
  EXPECT_NE(find("layers.1/linear#0/backward/input/0"), nullptr);  // backward takes its forward's parent
  EXPECT_NE(find("layers.0/backward/grad/weight"), nullptr);
  EXPECT_NE(find("layers.0/forward/parameter/bias"), nullptr);
  EXPECT_NE(find("<global>/relu#1/forward/output/0"), nullptr);
}

TEST(MsprobeJson, PythonNonFiniteTokensAndBadEntriesAreNamed) {
  const std::string text = R"({"task": "statistics", "level": "L1", "data": {
    "Torch.exp.0.forward": {"input_args": [{"type": "torch.Tensor", "dtype": "torch.float16", "shape": [2],
        "Max": Infinity, "Min": -Infinity, "Mean": NaN, "Norm": Infinity}, 3, null],
      "input_kwargs": {"out": {"type": "torch.Tensor", "dtype": "torch.float16", "shape": [2], "Max": 1}},
      "output": [{"type": "torch.Tensor", "dtype": "torch.complex64", "shape": [2]}]},
    "garbage": {},
    "Torch.bad.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [-1]}]}}})";
  auto dump = pf::parse_msprobe_dump_json(text, "", "x/dump.json");
  ASSERT_TRUE(dump.ok()) << dump.status().message();
  ASSERT_EQ(dump->tensors.size(), 2u);
  EXPECT_EQ(dump->tensors[0].name, "<global>/exp#0/forward/input/0");
  EXPECT_TRUE(std::isinf(dump->tensors[0].stats->max) && dump->tensors[0].stats->max > 0);
  EXPECT_TRUE(std::isinf(dump->tensors[0].stats->min) && dump->tensors[0].stats->min < 0);
  EXPECT_TRUE(std::isnan(dump->tensors[0].stats->mean));
  EXPECT_EQ(dump->tensors[1].name, "<global>/exp#0/forward/input/1");  // the kwarg tensor after the args
  EXPECT_EQ(dump->tensors[1].msprobe_name, "Torch.exp.0.forward.input.out");
  ASSERT_EQ(dump->problems.size(), 3u);
  EXPECT_TRUE(contains(dump->problems[0].message(), "x/dump.json: tensor 'Torch.exp.0.forward.output.0': unsupported dtype"));
  EXPECT_TRUE(contains(dump->problems[1].message(), "entry 'garbage': name not understood"));
  EXPECT_TRUE(contains(dump->problems[2].message(), "negative entry"));
}

TEST(MsprobeJson, NotAnMsprobeDumpIsAnError) {
  EXPECT_FALSE(pf::parse_msprobe_dump_json("[1, 2", "", "a").ok());
  EXPECT_FALSE(pf::parse_msprobe_dump_json("{\"data\": {}}", "", "a").ok());
  auto r = pf::parse_msprobe_dump_json(R"({"task": "overflow_check", "level": "L1", "data": {}})", "", "a");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.status().message(), "overflow_check"));
}

TEST(MsprobeSource, DetectedInAStepRankLayoutAndStatisticsOnly) {
  TempDir tmp;
  const fs::path rank = tmp / "dump" / "step3" / "rank1";
  fs::create_directories(rank);
  fs::copy(kFixtures / "msprobe" / "statistics_mix" / "dump.json", rank / "dump.json");
  fs::copy(kFixtures / "msprobe" / "statistics_mix" / "construct.json", rank / "construct.json");
  EXPECT_TRUE(pf::is_msprobe_dump(tmp / "dump"));
  EXPECT_FALSE(pf::is_msprobe_dump(tmp.path()));
  auto src = parity::open_source(tmp / "dump");
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_TRUE(contains((*src)->describe(), "msprobe, statistics mix"));
  EXPECT_TRUE((*src)->problems().empty());
  ASSERT_FALSE((*src)->records().empty());
  for (const parity::Record& r : (*src)->records()) {
    EXPECT_EQ(r.step, 3);
    EXPECT_EQ(r.rank, 1);
    EXPECT_FALSE(r.has_data);
    EXPECT_TRUE(r.stats.has_value());
  }
}

}  // namespace
