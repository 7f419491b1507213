// decode_manifest_record (src/dump/manifest_record.h): the simdjson path reads every record exactly as
// nlohmann's reference does — well-formed records as the writer writes them, records with odd but valid
// JSON (keys twice, other types, big or unsigned integers, escapes), and damaged ones (a flipped byte, a
// cut, invalid UTF-8, a control character, bytes after the object), which must go to the reference.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "dump/event_json.h"
#include "dump/manifest_record.h"
#include "parity/json_depth.h"

using namespace parity;
using parity::dump::detail::ManifestRecord;

namespace {

bool same_double(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b); }

bool same_stats(const std::optional<TensorStats>& a, const std::optional<TensorStats>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return same_double(a->min, b->min) && same_double(a->max, b->max) && same_double(a->mean, b->mean) &&
         same_double(a->l2norm, b->l2norm) && same_double(a->absmax, b->absmax) && a->nan_count == b->nan_count &&
         a->inf_count == b->inf_count && a->zero_count == b->zero_count &&
         a->subnormal_count == b->subnormal_count && a->numel == b->numel;
}

// Decodes `text` by the fast path alone and by the reference; says how they differ ("" = the same).
// The fast path may hand a record on (then the reference decides, and nothing can differ), but whatever
// it accepts the reference must accept and read alike. `fast` tells whether it accepted.
std::string difference(const std::string& text, bool* fast = nullptr) {
  ManifestRecord f, r;
  const bool fok = dump::detail::decode_manifest_record_fast(text, f);
  const bool rok = dump::detail::decode_manifest_record_reference(text, r);
  if (fast) *fast = fok;
  if (!fok) return "";
  if (!rok) return "the fast path accepts what the reference refuses";
  std::string d;
  auto check = [&](bool same, const char* what) { if (!same) d += std::string(what) + " "; };
  check(f.kind == r.kind && f.schema == r.schema, "kind/schema");
  check(f.name == r.name && f.module == r.module && f.op == r.op, "name/module/op");
  check(f.direction == r.direction && f.role == r.role && f.dtype == r.dtype && f.device == r.device, "strings");
  check(f.index == r.index && f.step == r.step && f.rank == r.rank && f.order == r.order, "integers");
  check(f.shape == r.shape && f.stride == r.stride, "shape/stride");
  check(f.args == r.args, "args");
  check(same_stats(f.stats, r.stats), "stats");
  check(f.crc32c == r.crc32c, "crc32c");
  check(f.has_data == r.has_data && f.shard == r.shard && f.offset == r.offset && f.nbytes == r.nbytes, "data");
  return d;
}

std::string written_record(int k) {
  dump::EventMeta m;
  m.name = "model.layers." + std::to_string(k) + ".mlp/forward/output/0";
  m.module = "model.layers." + std::to_string(k) + ".mlp";
  m.op = k % 2 ? "LlamaMLP" : "softmax";
  m.direction = "forward";
  m.role = "output";
  m.index = k % 3;
  m.step = k;
  m.order = 100 + k;
  m.dtype = k % 2 ? DType::kBF16 : DType::kF32;
  m.shape = {2, 16, 64 + k};
  m.stride = {1024, 64, 1};
  m.device = "cuda:0";
  TensorStats s;
  s.min = -3.5 - k;
  s.max = 1e300;
  s.mean = k % 3 ? 1.0 / 3.0 : std::nan("");
  s.l2norm = 12.25;
  s.absmax = 1e-310;  // subnormal
  s.nan_count = k;
  s.numel = 2048;
  m.stats = s;
  if (k % 4 == 0) m.crc32c = 0xdeadbeefu + static_cast<uint32_t>(k);
  if (k % 5 == 0) m.args_json = R"({"args": [1, 2.5, "x", null, {"dim": -1}], "kwargs": {"dtype": "torch.float32"}})";
  nlohmann::json data = k % 2 ? nlohmann::json{{"shard", "data-000000.bin"}, {"offset", 4096 * k}, {"nbytes", 8192}}
                              : nlohmann::json(nullptr);
  return dump::detail::event_to_json(m, k % 8, data).dump();
}

}  // namespace

TEST(ManifestRecord, WrittenRecordsReadTheSameBothWays) {
  for (int k = 0; k < 40; ++k) {
    bool fast = false;
    EXPECT_EQ(difference(written_record(k), &fast), "") << written_record(k);
    EXPECT_TRUE(fast) << "the fast path handed on a record the writer wrote: " << written_record(k);
  }
  ManifestRecord r;
  std::string text = written_record(1);
  ASSERT_TRUE(dump::detail::decode_manifest_record_fast(text, r));
  EXPECT_EQ(r.name, "model.layers.1.mlp/forward/output/0");
  EXPECT_EQ(r.shape, (std::vector<int64_t>{2, 16, 65}));
  ASSERT_TRUE(r.stats.has_value());
  EXPECT_EQ(r.stats->nan_count, 1);
  EXPECT_EQ(r.shard, "data-000000.bin");
}

TEST(ManifestRecord, OddButValidJsonReadsTheSameBothWays) {
  const char* cases[] = {
      R"({"kind":"event","name":"a","name":"b","dtype":"float32"})",                 // a key twice: the last
      R"({"kind":"event","stats":{"min":1},"stats":"none"})",                        // ... of another type
      R"({"kind":"event","data":{"shard":"x","offset":1},"data":{"nbytes":2}})",
      R"({"kind":"event","step":18446744073709551615,"order":9223372036854775807})",  // unsigned, int64 max
      R"({"kind":"event","step":-9223372036854775808,"index":1.0,"rank":1e2})",       // int64 min, floats
      R"({"kind":"event","shape":[1,"2",3.5,null,[4],-0],"stride":[true,{}]})",
      R"({"kind":"event","stats":{"min":"1","max":null,"nan":2.0,"numel":-1,"mean":1e308,"l2norm":-0.0}})",
      R"({"kind":"event","name":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/","module":"\u0000x"})",
      R"({"kind":"event","args":[1.0,1e2,-0.0,1E-7,12345678901234567890],"crc32c":12})",
      R"({"kind":"event","args":{"b":1,"a":[{"c":null}],"b":2}})",
      R"(  {"kind":"header","schema":"parity.dump/1.1"}  )",
      R"({})",
      R"({"kind":"close","":1,"x":{"y":[[[]]]}})",
  };
  for (const char* c : cases) {
    bool fast = false;
    EXPECT_EQ(difference(c, &fast), "") << c;
    EXPECT_TRUE(fast) << "handed on: " << c;
  }
  // An integer beyond 64 bits (nlohmann reads a float) is the reference's to read.
  EXPECT_EQ(difference(R"({"kind":"event","step":123456789012345678901234567890})"), "");
}

TEST(ManifestRecord, DamagedRecordsAreJudgedByTheReference) {
  const char* cases[] = {
      R"({"kind":"event","name":"a"} x)",  // bytes after the object
      R"({"kind":"event","name":"a",})",   // trailing comma
      R"({"kind":"event","n":01})",        // a leading zero in a value the reader does not use
      R"({"kind":"event","n":tru})",
      "{\"kind\":\"event\",\"name\":\"a\tb\"}",  // a raw control character in a string
      "{\"kind\":\"event\",\"name\":\"\xff\xfe\"}",  // invalid UTF-8
      "{\"kind\":\"event\",\"name\":\"\xc3\"}",
      R"([{"kind":"event"}])",
      R"("event")",
      R"({"kind":"event","step":NaN})",
      "",
  };
  for (const char* c : cases) {
    bool fast = true;
    EXPECT_EQ(difference(c, &fast), "") << c;
    EXPECT_FALSE(fast) << "the fast path accepted damaged JSON: " << c;
  }
  // Nesting: simdjson takes records up to kMaxJsonDepth - 1 levels and hands deeper ones on, to the depth
  // check (parity/json_depth.h), so nothing it accepts is beyond the limit.
  for (size_t depth : {kMaxJsonDepth - 3, kMaxJsonDepth - 2, kMaxJsonDepth - 1, kMaxJsonDepth, kMaxJsonDepth + 1, size_t{70000}}) {
    const size_t inner = depth - 1;  // the record's own object is one level
    std::string text = R"({"kind":"event","x":)" + std::string(inner, '[') + std::string(inner, ']') + "}";
    ASSERT_EQ(json_depth_problem(text).empty(), depth <= kMaxJsonDepth) << depth;
    ManifestRecord m;
    const bool fast = dump::detail::decode_manifest_record_fast(text, m);
    EXPECT_EQ(fast, depth <= kMaxJsonDepth - 1) << depth;
    if (fast) {
      EXPECT_EQ(m.kind, "event");
    }
  }
  // Random damage to written records: every byte flipped or cut somewhere, seeded.
  std::mt19937 rng(7);
  for (int k = 0; k < 40; ++k) {
    const std::string good = written_record(k);
    for (int trial = 0; trial < 200; ++trial) {
      std::string bad = good;
      const size_t at = rng() % bad.size();
      switch (trial % 3) {
        case 0: bad[at] = static_cast<char>(rng() % 256); break;
        case 1: bad.resize(at); break;
        default: bad.insert(at, 1, "{}[]\",:0-e.\\ n"[rng() % 14]); break;
      }
      ASSERT_EQ(difference(bad), "") << bad;
    }
  }
}
