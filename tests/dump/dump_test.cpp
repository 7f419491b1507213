// Tests of the capture dump: CRC32C vectors, frames, the writer/reader round trip, crash tolerance
// (truncation at every byte of a tail, a flipped byte), back-pressure, no-overwrite, fused statistics
// against parity::compute_stats, and export.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <omp.h>

#include "dump/stats_lanes.h"
#include "parity/dump.h"
#include "parity/open_source.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace parity;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = parity_test::process_temp_dir() / name;
  fs::remove_all(d);
  return d;
}

dump::EventMeta meta(const std::string& name, int64_t step, int64_t order, Shape shape) {
  dump::EventMeta m;
  m.name = name;
  m.module = "layers.0";
  m.op = "Linear";
  m.direction = "forward";
  m.role = "output";
  m.index = 0;
  m.step = step;
  m.order = order;
  m.dtype = DType::kF32;
  m.shape = shape;
  m.device = "cpu";
  return m;
}

dump::Buffer floats(const std::vector<float>& v) {
  auto b = dump::Buffer::allocate(v.size() * 4);
  std::memcpy(b.bytes.get(), v.data(), v.size() * 4);
  return b;
}

}  // namespace

// Known answers: RFC 3720 §B.4 (iSCSI) test vectors and the "123456789" check value of CRC-32C.
TEST(Crc32c, KnownVectors) {
  const char* check = "123456789";
  EXPECT_EQ(dump::crc32c(check, 9), 0xE3069283u);
  EXPECT_EQ(dump::crc32c_table(check, 9), 0xE3069283u);
  std::vector<unsigned char> zeros(32, 0), ones(32, 0xFF), inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<unsigned char>(i);
    dec[i] = static_cast<unsigned char>(31 - i);
  }
  for (auto f : {&dump::crc32c, &dump::crc32c_table}) {
    EXPECT_EQ(f(zeros.data(), 32, 0), 0x8A9136AAu);
    EXPECT_EQ(f(ones.data(), 32, 0), 0x62A8AB43u);
    EXPECT_EQ(f(inc.data(), 32, 0), 0x46DD794Eu);
    EXPECT_EQ(f(dec.data(), 32, 0), 0x113FDB5Cu);
    EXPECT_EQ(f(nullptr, 0, 0), 0u);
  }
}

TEST(Crc32c, HardwareAndTableAgreeAndExtend) {
  std::mt19937 rng(7);
  std::vector<unsigned char> buf(10007);
  for (auto& c : buf) c = static_cast<unsigned char>(rng());
  for (size_t n : {0u, 1u, 7u, 8u, 9u, 63u, 1000u, 10007u}) {
    EXPECT_EQ(dump::crc32c(buf.data(), n), dump::crc32c_table(buf.data(), n)) << n;
    for (size_t cut : {size_t(0), n / 3, n}) {
      EXPECT_EQ(dump::crc32c(buf.data() + cut, n - cut, dump::crc32c(buf.data(), cut)), dump::crc32c(buf.data(), n));
    }
  }
}

TEST(FusedStats, MatchesComputeStatsDefinitions) {
  std::vector<float> v = {1.0f, -2.0f, NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, 3.5f};
  auto s = dump::fused_stats(DType::kF32, v.data(), static_cast<int64_t>(v.size()));
  EXPECT_EQ(s.nan_count, 1);
  EXPECT_EQ(s.inf_count, 2);
  EXPECT_FALSE(s.inf_split_known());  // the lanes count Inf unsigned: the split stays 0 + 0, unknown
  EXPECT_EQ(s.pinf_count + s.ninf_count, 0);
  EXPECT_TRUE(std::isnan(s.std));  // not measured
  EXPECT_EQ(s.zero_count, 2);
  EXPECT_EQ(s.subnormal_count, 1);
  EXPECT_EQ(s.min, -2.0);
  EXPECT_EQ(s.max, 3.5);
  EXPECT_EQ(s.absmax, 3.5);
  EXPECT_NEAR(s.mean, (1.0 - 2.0 + 1e-40 + 3.5) / 6.0, 1e-12);
  EXPECT_NEAR(s.l2norm, std::sqrt(1 + 4 + 12.25), 1e-12);

  // No finite element: 0, as compute_stats publishes it (parity/tensor.h), not the struct's NaN.
  const std::vector<float> nonfinite = {NAN, INFINITY};
  for (int64_t count : {0, 2}) {
    auto none = dump::fused_stats(DType::kF32, nonfinite.data(), count);
    for (double x : {none.min, none.max, none.mean, none.l2norm, none.absmax}) EXPECT_EQ(x, 0.0) << count;
  }

  // Random data in several dtypes, crossing chunk boundaries: same as the reference compute_stats.
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  const int64_t n = 200003;
  std::vector<float> f(n);
  for (auto& x : f) x = nd(rng);
  f[5] = NAN;
  f[70000] = 0.0f;
  std::vector<uint16_t> bf(n), h(n);
  for (int64_t i = 0; i < n; ++i) {
    bf[i] = static_cast<uint16_t>(encode_rne(DType::kBF16, f[i]));
    h[i] = static_cast<uint16_t>(encode_rne(DType::kF16, f[i] * 1e-4));  // reaches f16's subnormal range
  }
  struct Case { DType dt; const void* p; };
  for (const Case& c : {Case{DType::kF32, f.data()}, Case{DType::kBF16, bf.data()}, Case{DType::kF16, h.data()}}) {
    auto got = dump::fused_stats(c.dt, c.p, n);
    auto threaded = dump::fused_stats(c.dt, c.p, n, 3);  // same chunks, same order: identical bits
    EXPECT_EQ(std::memcmp(&threaded.mean, &got.mean, 8), 0);
    EXPECT_EQ(std::memcmp(&threaded.l2norm, &got.l2norm, 8), 0);
    EXPECT_EQ(threaded.min, got.min);
    EXPECT_EQ(threaded.zero_count, got.zero_count);
    TensorView tv;
    tv.dtype = c.dt;
    tv.shape = {n};
    tv.numel = n;
    tv.data = static_cast<const std::byte*>(c.p);
    auto ref = compute_stats(tv);
    SCOPED_TRACE(dtype_name(c.dt));
    EXPECT_EQ(got.nan_count, ref.nan_count);
    EXPECT_EQ(got.zero_count, ref.zero_count);
    EXPECT_EQ(got.subnormal_count, ref.subnormal_count);
    EXPECT_EQ(got.min, ref.min);
    EXPECT_EQ(got.max, ref.max);
    EXPECT_EQ(got.absmax, ref.absmax);
    EXPECT_NEAR(got.mean, ref.mean, 1e-12 * (1 + std::fabs(ref.l2norm)));
    EXPECT_NEAR(got.l2norm, ref.l2norm, 1e-12 * ref.l2norm);
  }
  if (true) {
    const auto& h16 = h;
    auto s16 = dump::fused_stats(DType::kF16, h16.data(), n);
    EXPECT_GT(s16.subnormal_count, 0) << "the f16 case must exercise subnormals";
  }
}

// The SIMD kernel must equal the portable 8-lane loop bit for bit (sums, min/max, every count), for
// every length remainder and with NaN, ±Inf, ±0 and subnormals sprinkled in, in all three formats.
template <typename Tr>
void expect_simd_equals_scalar(DType dt, const std::vector<typename Tr::Raw>& raw) {
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(8), int64_t(9), int64_t(31), int64_t(1000),
                    static_cast<int64_t>(raw.size())}) {
    dump::detail::Lanes simd, ref;
    const int64_t done = dump::detail::lanes_simd(dt, raw.data(), n, simd);
    ASSERT_EQ(done % dump::detail::kLanes, 0);
    if (dump::detail::lanes_simd_available()) {
      ASSERT_EQ(done, n - n % dump::detail::kLanes) << dtype_name(dt);
    }
    dump::detail::lanes_scalar<Tr>(raw.data(), done, n, simd);
    dump::detail::lanes_scalar<Tr>(raw.data(), 0, n, ref);
    SCOPED_TRACE(std::string(dtype_name(dt)) + " n=" + std::to_string(n));
    EXPECT_EQ(simd.nan, ref.nan);
    EXPECT_EQ(simd.inf, ref.inf);
    EXPECT_EQ(simd.zero, ref.zero);
    EXPECT_EQ(simd.sub, ref.sub);
    for (int j = 0; j < dump::detail::kLanes; ++j) {
      EXPECT_EQ(std::memcmp(&simd.sum[j], &ref.sum[j], 8), 0) << simd.sum[j] << " vs " << ref.sum[j];
      EXPECT_EQ(std::memcmp(&simd.sq[j], &ref.sq[j], 8), 0) << simd.sq[j] << " vs " << ref.sq[j];
      EXPECT_EQ(std::memcmp(&simd.mn[j], &ref.mn[j], 4), 0) << simd.mn[j] << " vs " << ref.mn[j];
      EXPECT_EQ(std::memcmp(&simd.mx[j], &ref.mx[j], 4), 0) << simd.mx[j] << " vs " << ref.mx[j];
      EXPECT_EQ(std::memcmp(&simd.amax[j], &ref.amax[j], 4), 0);
    }
  }
}

TEST(FusedStats, SimdKernelEqualsPortableLanesBitForBit) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  const size_t n = 65536 + 13;
  std::vector<uint32_t> f32(n);
  std::vector<uint16_t> bf(n), h(n);
  const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -3e-39f, 6e-8f, -1e-7f};
  for (size_t i = 0; i < n; ++i) {
    float x = nd(rng) * (rng() % 4 == 0 ? 1e-5f : 1.0f);
    if (rng() % 50 == 0) x = specials[rng() % 10];
    std::memcpy(&f32[i], &x, 4);
    bf[i] = static_cast<uint16_t>(encode_rne(DType::kBF16, x));
    h[i] = static_cast<uint16_t>(encode_rne(DType::kF16, x));
  }
  expect_simd_equals_scalar<dump::detail::F32Traits>(DType::kF32, f32);
  expect_simd_equals_scalar<dump::detail::BF16Traits>(DType::kBF16, bf);
  expect_simd_equals_scalar<dump::detail::F16Traits>(DType::kF16, h);
  // every one of the 65,536 f16 and bf16 bit patterns, once each
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  expect_simd_equals_scalar<dump::detail::F16Traits>(DType::kF16, all);
  expect_simd_equals_scalar<dump::detail::BF16Traits>(DType::kBF16, all);
}

TEST(Frames, TornAndCorruptTailsAreReportedNotFatal) {
  fs::path d = fresh_dir("frames");
  fs::create_directories(d);
  const std::string a = dump::encode_frame("{\"kind\":\"a\"}"), b = dump::encode_frame("{\"kind\":\"bb\"}");
  const std::string whole = a + b;
  for (size_t cut = a.size(); cut <= whole.size(); ++cut) {
    std::ofstream(d / "f", std::ios::binary | std::ios::trunc) << whole.substr(0, cut);
    auto s = dump::scan_frames(d / "f");
    ASSERT_TRUE(s.ok());
    if (cut == whole.size()) {
      EXPECT_EQ(s->payloads.size(), 2u);
      EXPECT_TRUE(s->tail_problem.empty());
    } else {
      EXPECT_EQ(s->payloads.size(), 1u) << cut;
      EXPECT_EQ(s->valid_bytes, a.size());
      if (cut > a.size()) {
        EXPECT_NE(s->tail_problem.find("torn record at byte"), std::string::npos) << s->tail_problem;
      }
    }
  }
  std::string bad = whole;
  bad[a.size() + 14] ^= 0x20;  // a byte of b's payload
  std::ofstream(d / "f", std::ios::binary | std::ios::trunc) << bad;
  auto s = dump::scan_frames(d / "f");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->payloads.size(), 1u);
  EXPECT_NE(s->tail_problem.find("crc32c"), std::string::npos) << s->tail_problem;
  EXPECT_FALSE(dump::scan_frames(d / "missing").ok());
}

TEST(Dump, WriteReadRoundTripAlignedAndMapped) {
  fs::path run = fresh_dir("roundtrip");
  {
    dump::WriterOptions o;
    o.shard_bytes = 100;  // force several shards
    auto w = dump::DumpWriter::create(run, o);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->write_fingerprint(R"({"python":"3.11","torch":"1.13"})").ok());
    for (int i = 0; i < 5; ++i) {
      auto m = meta("layers.0/forward/output/" + std::to_string(i), 0, i, {3});
      m.index = i;
      m.stats = TensorStats{};
      m.stats->numel = 3;
      m.crc32c = 0xDEADBEEF;
      ASSERT_TRUE((*w)->append_event(m, floats({float(i), 1.5f, -2.0f})).ok());
    }
    auto m = meta("stats_only", 1, 0, {2, 2});
    m.stats = dump::fused_stats(DType::kF32, std::vector<float>{1, 2, 3, 4}.data(), 4);
    ASSERT_TRUE((*w)->append_event(m, {}).ok());
    ASSERT_TRUE((*w)->append_scalars(0, R"({"loss":2.5})").ok());
    ASSERT_TRUE((*w)->close().ok());
    EXPECT_EQ((*w)->counters().events, 6u);
  }
  auto r = dump::RunReader::open(run);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& recs = (*r)->records();
  ASSERT_EQ(recs.size(), 6u);
  EXPECT_TRUE((*r)->problems().empty()) << (*r)->problems()[0].ToString();
  for (int i = 0; i < 5; ++i) {
    const Record& rec = recs[i];
    EXPECT_EQ(rec.name, "layers.0/forward/output/" + std::to_string(i));
    EXPECT_EQ(rec.module, "layers.0");
    EXPECT_EQ(rec.order, i);
    EXPECT_EQ(rec.index, i);
    EXPECT_TRUE(rec.has_data);
    EXPECT_EQ(rec.crc32c, 0xDEADBEEFu);
    auto loc = (*r)->data_location(rec);
    ASSERT_TRUE(loc.has_value());
    EXPECT_EQ(loc->offset % dump::kDataAlignment, 0u);
    auto t = (*r)->load(rec);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % dump::kDataAlignment, 0u) << "mmap keeps the alignment";
    float got[3];
    std::memcpy(got, t->data, 12);
    EXPECT_EQ(got[0], float(i));
    EXPECT_EQ(got[2], -2.0f);
  }
  EXPECT_FALSE(recs[5].has_data);
  ASSERT_TRUE(recs[5].stats.has_value());
  EXPECT_EQ(recs[5].stats->max, 4.0);
  EXPECT_FALSE((*r)->load(recs[5]).ok());
  ASSERT_EQ((*r)->parts().size(), 1u);
  EXPECT_TRUE((*r)->parts()[0].closed);
  EXPECT_EQ((*r)->parts()[0].steps, (std::vector<int64_t>{0, 1}));
  ASSERT_EQ((*r)->scalars().size(), 1u);
  EXPECT_EQ((*r)->scalars()[0].json, R"({"loss":2.5})");
  ASSERT_TRUE((*r)->fingerprint_json().has_value());
  // the generic entry point finds the format
  auto src = open_source(run);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ((*src)->records().size(), 6u);
}

TEST(Dump, RefusesToOverwriteAndRejectsBadOptions) {
  fs::path run = fresh_dir("nooverwrite");
  {
    auto w = dump::DumpWriter::create(run, {});
    ASSERT_TRUE(w.ok());
  }
  auto again = dump::DumpWriter::create(run, {});
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already exists"), std::string::npos);
  dump::WriterOptions o;
  o.overwrite = true;
  EXPECT_TRUE(dump::DumpWriter::create(run, o).ok());
  o.rank = 1;
  o.overwrite = false;
  EXPECT_TRUE(dump::DumpWriter::create(run, o).ok()) << "another rank is another part";
  auto r = dump::RunReader::open(run);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->parts().size(), 2u);
  EXPECT_FALSE(dump::RunReader::open(fresh_dir("nothing_here")).ok());
}

TEST(Dump, BackPressureBoundsTheQueue) {
  fs::path run = fresh_dir("backpressure");
  dump::WriterOptions o;
  o.queue_bytes = 4096;
  auto w = dump::DumpWriter::create(run, o);
  ASSERT_TRUE(w.ok());
  std::vector<float> v(1000, 1.0f);  // 4000 bytes: at most one such tensor may wait
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE((*w)->append_event(meta("t" + std::to_string(i), 0, i, {1000}), floats(v)).ok());
    EXPECT_LE((*w)->counters().queued_bytes, 4096u);
  }
  ASSERT_TRUE((*w)->flush().ok());
  EXPECT_EQ((*w)->counters().events, 50u);
  ASSERT_TRUE((*w)->close().ok());
  EXPECT_FALSE((*w)->append_event(meta("late", 0, 0, {1}), floats({1})).ok());
}

// A writer killed mid-record: simulate every cut point of the manifest's last record and a cut
// inside the data shard. Every complete record stays readable; the reader reports the torn tail.
TEST(Dump, TruncatedManifestAndShardAreReportedNotFatal) {
  fs::path run = fresh_dir("torn");
  {
    auto w = dump::DumpWriter::create(run, {});
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*w)->append_event(meta("e" + std::to_string(i), 0, i, {4}), floats({1, 2, 3, 4})).ok());
    ASSERT_TRUE((*w)->flush().ok());
    // no close(): as after SIGKILL, no closing record
    const fs::path manifest = (*w)->part_dir() / "manifest.pfr";
    const auto full = fs::file_size(manifest);
    std::string bytes(full, '\0');
    std::ifstream(manifest, std::ios::binary).read(bytes.data(), full);
    (void)(*w)->close();
    std::ofstream(manifest, std::ios::binary | std::ios::trunc) << bytes;  // drop the close record again
    auto r0 = dump::RunReader::open(run);
    ASSERT_TRUE(r0.ok());
    EXPECT_FALSE((*r0)->parts()[0].closed);
    EXPECT_EQ((*r0)->records().size(), 3u);
    EXPECT_TRUE((*r0)->problems().empty());
    fs::resize_file(manifest, full - 5);
    auto r = dump::RunReader::open(run);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)->records().size(), 2u);
    ASSERT_EQ((*r)->problems().size(), 1u);
    EXPECT_NE((*r)->problems()[0].message().find("torn record"), std::string::npos);
    EXPECT_FALSE((*r)->parts()[0].manifest_tail.empty());
    // a record whose data was cut from the shard is listed but has no data, and is reported
    std::ofstream(manifest, std::ios::binary | std::ios::trunc) << bytes;
    fs::resize_file((*w)->part_dir() / "data-000000.bin", 64 + 16 + 8);
    auto r2 = dump::RunReader::open(run);
    ASSERT_TRUE(r2.ok());
    EXPECT_EQ((*r2)->records().size(), 3u);
    EXPECT_FALSE((*r2)->records()[2].has_data);
    EXPECT_TRUE((*r2)->records()[1].has_data);
    EXPECT_EQ((*r2)->problems().size(), 1u);
  }
}

TEST(Export, NpyAndSafetensorsReadBackThroughTheFormats) {
  fs::path run = fresh_dir("export_run");
  {
    auto w = dump::DumpWriter::create(run, {});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->append_event(meta("a/forward/output/0", 0, 0, {2, 2}), floats({1, 2, 3, 4})).ok());
    auto m = meta("b/forward/output/0", 0, 1, {3});
    m.dtype = DType::kBF16;
    auto buf = dump::Buffer::allocate(6);
    const uint16_t bits[3] = {0x3F80, 0xC000, 0x0000};  // 1, -2, 0
    std::memcpy(buf.bytes.get(), bits, 6);
    ASSERT_TRUE((*w)->append_event(m, std::move(buf)).ok());
    ASSERT_TRUE((*w)->close().ok());
  }
  auto r = dump::RunReader::open(run);
  ASSERT_TRUE(r.ok());
  for (const std::string fmt_name : {"npy", "safetensors"}) {
    fs::path out = fresh_dir("export_" + fmt_name);
    auto s = dump::export_run(**r, fmt_name, out);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->tensors, 2u);
    auto again = dump::export_run(**r, fmt_name, out);
    ASSERT_FALSE(again.ok()) << "export must refuse to overwrite";
    EXPECT_NE(again.status().message().find("already exists"), std::string::npos);
    const fs::path check = fmt_name == "npy" ? out / "rank0" / "step0" / "b__forward__output__0.npy"
                                             : out / "rank0_step0.safetensors";
    auto src = open_source(check);
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    const Record* b = nullptr;
    for (const Record& rec : (*src)->records())
      if (rec.name.find("b") != std::string::npos && rec.shape == Shape{3}) b = &rec;
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->dtype, fmt_name == "npy" ? DType::kF32 : DType::kBF16);
    auto t = (*src)->load(*b);
    ASSERT_TRUE(t.ok());
    double v[3];
    decode_to_double(*t, 0, 3, v);
    EXPECT_EQ(v[0], 1.0);
    EXPECT_EQ(v[1], -2.0);
    EXPECT_EQ(v[2], 0.0);
  }
}

// The parts of a run are listed by all threads and merged in rank order: the listing — records, their
// handles (each loads its own bytes), problems in order, part summaries, scalars, fingerprints — is the
// same at any thread count, including a run with a torn manifest, a missing shard and an unreadable part.
TEST(Dump, ListingIsTheSameWhateverTheThreadCount) {
  fs::path run = fresh_dir("threads");
  for (int rank = 0; rank < 7; ++rank) {
    dump::WriterOptions o;
    o.rank = rank;
    o.shard_bytes = 64;  // several shards per part
    auto w = dump::DumpWriter::create(run, o);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->write_fingerprint("{\"rank\":" + std::to_string(rank) + "}").ok());
    for (int e = 0; e < 5; ++e)
      ASSERT_TRUE((*w)->append_event(meta("e" + std::to_string(e), 0, e, {4}),
                                     floats({float(rank), float(e), 1.5f, -2.0f})).ok());
    ASSERT_TRUE((*w)->append_scalars(0, "{\"loss\":" + std::to_string(rank) + "}").ok());
    ASSERT_TRUE((*w)->close().ok());
  }
  fs::resize_file(run / "rank2" / "manifest.pfr", fs::file_size(run / "rank2" / "manifest.pfr") - 3);  // torn
  for (const auto& e : fs::directory_iterator(run / "rank4"))
    if (e.path().filename().string().rfind("data-", 0) == 0) {
      fs::remove(e.path());  // its events' shard is missing
      break;
    }
  fs::resize_file(run / "rank5" / "manifest.pfr", 3);  // not even a frame header
  auto listing = [&](int threads) {
    omp_set_num_threads(threads);
    auto r = dump::RunReader::open(run);
    EXPECT_TRUE(r.ok());
    std::string text;
    for (const Record& rec : (*r)->records()) {
      text += rec.name + " " + std::to_string(rec.rank) + " " + rec.file + " " + std::to_string(rec.has_data);
      if (rec.has_data) {
        auto v = (*r)->load(rec);
        EXPECT_TRUE(v.ok()) << rec.name;
        if (v.ok()) {  // each handle loads its own record's bytes: (rank, event, 1.5, -2)
          const float* f = static_cast<const float*>(static_cast<const void*>(v->data));
          EXPECT_EQ(f[0], static_cast<float>(rec.rank)) << rec.name;
          EXPECT_EQ(f[1], static_cast<float>(std::stoi(rec.name.substr(1)))) << rec.name;
          text += " " + std::to_string(f[0]) + "," + std::to_string(f[1]);
        }
      }
      text += "\n";
    }
    for (const Status& st : (*r)->problems()) text += "problem " + st.message() + "\n";
    for (const dump::PartSummary& p : (*r)->parts())
      text += "part " + std::to_string(p.rank) + " " + std::to_string(p.events) + " " + std::to_string(p.closed) + "\n";
    for (const dump::ScalarRecord& s : (*r)->scalars()) text += "scalars " + std::to_string(s.rank) + " " + s.json + "\n";
    for (const auto& [rank, fp] : (*r)->fingerprints()) text += "fingerprint " + std::to_string(rank) + " " + fp + "\n";
    return text;
  };
  const std::string one = listing(1);
  EXPECT_NE(one.find("problem"), std::string::npos);
  EXPECT_NE(one.find("e4 6 "), std::string::npos);  // the last rank is listed after the broken ones
  for (int threads : {2, 3, 8}) EXPECT_EQ(listing(threads), one) << threads << " threads";
  omp_set_num_threads(omp_get_num_procs());
}
