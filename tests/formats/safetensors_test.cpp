// .safetensors reading: files written byte by byte here (no safetensors package on this machine), every
// dtype including BF16 and the fp8 formats, and every way the header can lie.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "formats/test_util.h"
#include "parity/dtype.h"
#include "parity/open_source.h"

namespace {

using namespace parity_test;

std::string safetensors_bytes(const std::string& json, const std::string& buffer) {
  return le_bytes(json.size(), 8) + json + buffer;
}

struct Tensor {
  std::string key, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

// Lays the tensors out back to back and writes the matching header (plus a __metadata__ entry).
std::string build(const std::vector<Tensor>& ts) {
  std::string json = "{\"__metadata__\": {\"format\": \"pt\"}", buf;
  for (const Tensor& t : ts) {
    std::string shape;
    for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(t.shape[i]);
    json += ", \"" + t.key + "\": {\"dtype\": \"" + t.dtype + "\", \"shape\": [" + shape + "], \"data_offsets\": [" +
            std::to_string(buf.size()) + ", " + std::to_string(buf.size() + t.bytes.size()) + "]}";
    buf += t.bytes;
  }
  json += "}";
  while (json.size() % 8 != 0) json += ' ';  // the reference writer pads the header with spaces
  return safetensors_bytes(json, buf);
}

// Encodes `values` into `t` with parity's own RNE encoder (exact here: the values are representable).
std::string encode(parity::DType t, const std::vector<double>& values) {
  std::string s;
  for (double v : values) s += le_bytes(parity::encode_rne(t, v), parity::dtype_size(t));
  return s;
}

TEST(Safetensors, EveryDTypeRoundTrips) {
  TempDir d;
  const std::vector<double> vals = {0, 1, -2, 3, 0.5, -0.25};  // representable in every float dtype
  const std::vector<double> ints = {0, 1, -2, 3, 100, -100};
  const std::vector<double> uints = {0, 1, 2, 3, 200, 255};
  const std::vector<double> bools = {0, 1, 1, 0, 1, 0};
  const std::vector<std::pair<const char*, parity::DType>> dts = {
      {"F64", parity::DType::kF64}, {"F32", parity::DType::kF32},        {"F16", parity::DType::kF16},
      {"BF16", parity::DType::kBF16}, {"F8_E4M3", parity::DType::kF8E4M3}, {"F8_E5M2", parity::DType::kF8E5M2},
      {"I8", parity::DType::kI8},   {"I16", parity::DType::kI16},        {"I32", parity::DType::kI32},
      {"I64", parity::DType::kI64}, {"U8", parity::DType::kU8},          {"BOOL", parity::DType::kBool},
  };
  std::vector<Tensor> ts;
  for (const auto& [name, t] : dts) {
    const auto& v = t == parity::DType::kU8 ? uints : t == parity::DType::kBool ? bools
                    : parity::dtype_is_float(t) ? vals : ints;
    ts.push_back({std::string("t_") + name, name, {2, 3}, encode(t, v)});
  }
  ts.push_back({"scalar", "F32", {}, encode(parity::DType::kF32, {42})});
  ts.push_back({"empty", "BF16", {0, 4}, ""});
  write_file(d / "m.safetensors", build(ts));
  auto src = parity::open_source(d / "m.safetensors");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_TRUE((*src)->problems().empty());
  ASSERT_EQ((*src)->records().size(), dts.size() + 2);
  for (const auto& [name, t] : dts) {
    const parity::Record* r = find_record(**src, std::string("t_") + name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_EQ(r->dtype, t);
    EXPECT_EQ(r->shape, (parity::Shape{2, 3}));
    const auto& v = t == parity::DType::kU8 ? uints : t == parity::DType::kBool ? bools
                    : parity::dtype_is_float(t) ? vals : ints;
    EXPECT_EQ(load_values(**src, r->name), v) << name;
  }
  EXPECT_EQ(load_values(**src, "scalar"), std::vector<double>{42});
  EXPECT_TRUE(find_record(**src, "scalar")->shape.empty());
  EXPECT_TRUE(load_values(**src, "empty").empty());
  EXPECT_EQ(find_record(**src, "__metadata__"), nullptr);
  // Records come in data order (the writer's layout order).
  EXPECT_EQ((*src)->records()[0].name, "t_F64");
  EXPECT_EQ((*src)->records()[0].order, 0);
}

TEST(Safetensors, FileKeySelection) {
  TempDir d;
  write_file(d / "l.safetensors", build({{"logits", "F32", {2}, encode(parity::DType::kF32, {1, 2})},
                                         {"labels", "I64", {2}, encode(parity::DType::kI64, {0, 1})}}));
  auto s = parity::open_source((d / "l.safetensors").string() + ":labels");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ((*s)->records().size(), 1u);
  EXPECT_EQ(load_values(**s, "labels"), (std::vector<double>{0, 1}));
}

TEST(Safetensors, WholeFileErrors) {
  TempDir d;
  const std::string good = build({{"a", "F32", {2}, encode(parity::DType::kF32, {1, 2})},
                                  {"b", "F32", {2}, encode(parity::DType::kF32, {3, 4})}});
  const std::string a = "\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}";
  struct Bad {
    std::string name, bytes, message;
  };
  const std::vector<Bad> cases = {
      {"empty", "", "file too short (0 bytes)"},
      {"short", good.substr(0, 5), "file too short (5 bytes)"},
      {"len", le_bytes(1000, 8) + "{}", "header length 1000 exceeds the file size (10 bytes)"},
      {"len_huge", le_bytes(~uint64_t{0}, 8) + "{}", "header length 18446744073709551615 exceeds the file size"},
      {"truncated", good.substr(0, 30), "exceeds the file size"},
      {"json", safetensors_bytes("{\"a\": [1, 2", ""), "header is not valid JSON"},
      {"notobj", safetensors_bytes("[1, 2]", ""), "header is not a JSON object"},
      {"overlap", safetensors_bytes("{" + a + ", \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
                                    std::string(12, '\0')),
       "data of tensors 'a' and 'b' overlap"},
  };
  for (const Bad& c : cases) {
    const fs::path p = d / (c.name + ".safetensors");
    write_file(p, c.bytes);
    auto s = parity::open_source(p);
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(s.status().code(), parity::StatusCode::kInvalid) << c.name;
    EXPECT_TRUE(contains(s.status().message(), p.string() + ": ")) << c.name << ": " << s.status().message();
    EXPECT_TRUE(contains(s.status().message(), c.message)) << c.name << ": " << s.status().message();
  }
  // Every truncation of a good file fails cleanly (a cut inside the data makes an offset fall outside).
  for (size_t n = 0; n < good.size(); ++n) {
    write_file(d / "cut.safetensors", good.substr(0, n));
    auto s = parity::open_source(d / "cut.safetensors");
    EXPECT_TRUE(!s.ok() || !(*s)->problems().empty()) << n;
  }
}

TEST(Safetensors, PerTensorProblemsLeaveTheRestReadable) {
  TempDir d;
  const std::string ok = "\"ok\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}";
  struct Bad {
    std::string entry, message;
    parity::StatusCode code;
  };
  const std::vector<Bad> cases = {
      {"{\"dtype\": \"C64\", \"shape\": [1], \"data_offsets\": [8, 16]}", "unsupported dtype \"C64\"", parity::StatusCode::kTypeError},
      {"{\"dtype\": \"F8_E8M0\", \"shape\": [8], \"data_offsets\": [8, 16]}", "unsupported dtype \"F8_E8M0\"", parity::StatusCode::kTypeError},
      {"{\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [8, 16]}", "shape [3] F32 needs 12 bytes, data_offsets [8,16] hold 8",
       parity::StatusCode::kInvalid},
      {"{\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 4000]}", "data_offsets [8,4000] lie outside the data buffer (16 bytes)",
       parity::StatusCode::kInvalid},
      {"{\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [16, 8]}", "end before they begin", parity::StatusCode::kInvalid},
      {"{\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [8, 16]}", "overflows int64",
       parity::StatusCode::kInvalid},
      {"{\"dtype\": \"F64\", \"shape\": [4611686018427387904], \"data_offsets\": [8, 16]}", "data size of shape",
       parity::StatusCode::kInvalid},
      {"{\"dtype\": \"F32\", \"shape\": [-2], \"data_offsets\": [8, 16]}", "not a list of non-negative integers",
       parity::StatusCode::kInvalid},
      {"{\"dtype\": \"F32\", \"shape\": [2.5], \"data_offsets\": [8, 16]}", "not a list of non-negative integers",
       parity::StatusCode::kInvalid},
      {"{\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [-8, 16]}", "not non-negative integers", parity::StatusCode::kInvalid},
      {"{\"dtype\": \"F32\", \"shape\": [2]}", "\"data_offsets\" is not [begin, end]", parity::StatusCode::kInvalid},
      {"{\"shape\": [2], \"data_offsets\": [8, 16]}", "missing or non-string \"dtype\"", parity::StatusCode::kInvalid},
      {"[1]", "entry is not a JSON object", parity::StatusCode::kInvalid},
  };
  for (const Bad& c : cases) {
    const fs::path p = d / "t.safetensors";
    write_file(p, safetensors_bytes("{" + ok + ", \"bad\": " + c.entry + "}", encode(parity::DType::kF32, {5, 6, 7, 8})));
    auto s = parity::open_source(p);
    ASSERT_TRUE(s.ok()) << c.entry << ": " << s.status().ToString();
    ASSERT_EQ((*s)->problems().size(), 1u) << c.entry;
    const parity::Status& st = (*s)->problems()[0];
    EXPECT_EQ(st.code(), c.code) << st.ToString();
    EXPECT_TRUE(contains(st.message(), p.string() + ": tensor 'bad': ")) << st.message();
    EXPECT_TRUE(contains(st.message(), c.message)) << c.entry << ": " << st.message();
    ASSERT_EQ((*s)->records().size(), 1u);
    EXPECT_EQ(load_values(**s, "ok"), (std::vector<double>{5, 6}));
  }
}

TEST(Safetensors, FileChangedAfterListing) {
  TempDir d;
  const fs::path p = d / "c.safetensors";
  write_file(p, build({{"a", "F32", {2}, encode(parity::DType::kF32, {1, 2})}}));
  auto s = parity::open_source(p);
  ASSERT_TRUE(s.ok());
  write_file(p, "x");  // truncated behind our back
  auto v = (*s)->load((*s)->records()[0]);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), parity::StatusCode::kCorrupt);
  EXPECT_TRUE(contains(v.status().message(), "file changed since it was listed")) << v.status().message();
}

}  // namespace
