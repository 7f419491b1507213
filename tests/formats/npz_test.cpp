// .npz reading: numpy.savez (stored members, viewed in place) and numpy.savez_compressed (deflated,
// inflated with a CRC check), key naming, and corrupt archives / members.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/test_util.h"
#include "parity/open_source.h"

namespace {

using namespace parity_test;

class NpzFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const int rc = run_python(dir_->path(), R"PY(
a = np.arange(12, dtype='<f4').reshape(3, 4) - 5.5
b = np.asfortranarray(np.arange(6, dtype='>i8').reshape(2, 3))
c = np.float16(0.25)
e = np.zeros((0,), dtype='<f8')
big = np.linspace(-1, 1, 100000).astype('<f8')
np.savez('stored.npz', a=a, b=b, c=c, e=e, big=big)
np.savez_compressed('deflated.npz', a=a, b=b, c=c, e=e, big=big)
np.savez('nested.npz', **{'layer1/out': a})
)PY");
    ASSERT_EQ(rc, 0);
  }
  static void TearDownTestSuite() { delete dir_; }
  static TempDir* dir_;
};
TempDir* NpzFiles::dir_ = nullptr;

std::vector<double> a_values() {
  std::vector<double> v;
  for (int i = 0; i < 12; ++i) v.push_back(i - 5.5);
  return v;
}

TEST_F(NpzFiles, StoredAndDeflatedHoldTheSameTensors) {
  for (const char* f : {"stored.npz", "deflated.npz"}) {
    auto src = parity::open_source(dir_->path() / f);
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    EXPECT_TRUE((*src)->problems().empty());
    std::vector<std::string> names;
    for (const auto& r : (*src)->records()) names.push_back(r.name);
    EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c", "e", "big"})) << f;  // archive order, no ".npy"
    EXPECT_EQ(load_values(**src, "a"), a_values());
    EXPECT_EQ(load_values(**src, "b"), (std::vector<double>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(load_values(**src, "c"), std::vector<double>{0.25});
    EXPECT_TRUE(load_values(**src, "e").empty());
    const auto big = load_values(**src, "big");
    ASSERT_EQ(big.size(), 100000u);
    EXPECT_EQ(big.front(), -1.0);
    EXPECT_EQ(big.back(), 1.0);
    const parity::Record* b = find_record(**src, "b");
    EXPECT_EQ(b->dtype, parity::DType::kI64);
    EXPECT_EQ(b->shape, (parity::Shape{2, 3}));
    auto bv = (*src)->load(*b);
    EXPECT_TRUE(bv->byteswapped);
    EXPECT_FALSE(bv->is_c_contiguous());
  }
}

TEST_F(NpzFiles, StoredMembersAreViewedInsideTheMapping) {
  // Two loads of a stored member share the one mapping: same data pointer while a view is alive.
  auto src = parity::open_source(dir_->path() / "stored.npz");
  ASSERT_TRUE(src.ok());
  auto v1 = (*src)->load(*find_record(**src, "big"));
  auto v2 = (*src)->load(*find_record(**src, "big"));
  ASSERT_TRUE(v1.ok() && v2.ok());
  EXPECT_EQ(v1->data, v2->data);
  // Deflated members are inflated into a buffer per load.
  auto dsrc = parity::open_source(dir_->path() / "deflated.npz");
  auto d1 = (*dsrc)->load(*find_record(**dsrc, "big"));
  auto d2 = (*dsrc)->load(*find_record(**dsrc, "big"));
  EXPECT_NE(d1->data, d2->data);
}

TEST_F(NpzFiles, KeysWithSlashesAndSelection) {
  auto src = parity::open_source(dir_->path() / "nested.npz");
  ASSERT_TRUE(src.ok());
  ASSERT_EQ((*src)->records().size(), 1u);
  EXPECT_EQ((*src)->records()[0].name, "layer1/out");
  auto sel = parity::open_source((dir_->path() / "stored.npz").string() + ":b");
  ASSERT_TRUE(sel.ok()) << sel.status().ToString();
  ASSERT_EQ((*sel)->records().size(), 1u);
  EXPECT_EQ(load_values(**sel, "b"), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  auto none = parity::open_source((dir_->path() / "stored.npz").string() + ":zz");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), parity::StatusCode::kNotFound);
  EXPECT_TRUE(contains(none.status().message(), "no tensor named 'zz' (it has a, b, c, e, big)")) << none.status().message();
}

TEST_F(NpzFiles, TruncatedArchivesFailWithTheFileName) {
  TempDir d;
  for (const char* f : {"stored.npz", "deflated.npz"}) {
    const std::string bytes = read_file(dir_->path() / f);
    for (size_t n : {size_t{0}, size_t{10}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
      write_file(d / "cut.npz", bytes.substr(0, n));
      auto s = parity::open_source(d / "cut.npz");
      ASSERT_FALSE(s.ok()) << f << " cut at " << n;
      EXPECT_TRUE(contains(s.status().message(), (d / "cut.npz").string() + ": corrupt zip archive")) << s.status().message();
    }
  }
}

// Locate a member's data in an archive by its local header name, to damage exactly that member.
size_t member_data_offset(const std::string& zip, const std::string& member) {
  size_t pos = 0;
  while ((pos = zip.find(std::string("PK\x03\x04", 4), pos)) != std::string::npos) {
    const auto u16 = [&](size_t o) { return static_cast<size_t>(static_cast<uint8_t>(zip[o])) | (static_cast<size_t>(static_cast<uint8_t>(zip[o + 1])) << 8); };
    const size_t nlen = u16(pos + 26), xlen = u16(pos + 28);
    if (zip.compare(pos + 30, nlen, member) == 0) return pos + 30 + nlen + xlen;
    pos += 4;
  }
  return std::string::npos;
}

TEST_F(NpzFiles, CorruptMemberIsAProblemOthersStillLoad) {
  TempDir d;
  // Stored: destroy member "a"'s .npy magic; "b" etc. must still be listed and load.
  std::string stored = read_file(dir_->path() / "stored.npz");
  const size_t off = member_data_offset(stored, "a.npy");
  ASSERT_NE(off, std::string::npos);
  stored[off + 1] = 'X';
  write_file(d / "s.npz", stored);
  auto s = parity::open_source(d / "s.npz");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ((*s)->problems().size(), 1u);
  EXPECT_TRUE(contains((*s)->problems()[0].message(), (d / "s.npz").string() + ": member 'a.npy': not a .npy file"))
      << (*s)->problems()[0].message();
  EXPECT_EQ((*s)->records().size(), 4u);
  EXPECT_EQ(load_values(**s, "b"), (std::vector<double>{0, 1, 2, 3, 4, 5}));

  // Deflated: flip bits in the middle of "big"'s compressed stream: listing works (header intact), load
  // reports a corrupt stream or a CRC mismatch, naming the member.
  std::string deflated = read_file(dir_->path() / "deflated.npz");
  const size_t doff = member_data_offset(deflated, "big.npy");
  ASSERT_NE(doff, std::string::npos);
  for (size_t k = 0; k < 64; ++k) deflated[doff + 2000 + k] = static_cast<char>(deflated[doff + 2000 + k] ^ 0x5A);
  write_file(d / "d.npz", deflated);
  auto ds = parity::open_source(d / "d.npz");
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  auto bad = (*ds)->load(*find_record(**ds, "big"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), parity::StatusCode::kCorrupt);
  EXPECT_TRUE(contains(bad.status().message(), "member 'big.npy'")) << bad.status().message();
  EXPECT_EQ(load_values(**ds, "a"), a_values());
}

TEST_F(NpzFiles, LyingZipDirectory) {
  TempDir d;
  std::string z = read_file(dir_->path() / "stored.npz");
  // Point the central directory offset (EOCD +16) past the end of the file.
  const size_t eocd = z.rfind(std::string("PK\x05\x06", 4));
  ASSERT_NE(eocd, std::string::npos);
  std::string moved = z;
  moved.replace(eocd + 16, 4, le_bytes(0x7FFFFFF0, 4));
  write_file(d / "cd.npz", moved);
  auto s = parity::open_source(d / "cd.npz");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.status().message(), "central directory lies outside the file")) << s.status().message();
  // An entry count far larger than the directory can hold.
  std::string many = z;
  many.replace(eocd + 10, 2, le_bytes(0xFFFE, 2));
  write_file(d / "many.npz", many);
  auto m = parity::open_source(d / "many.npz");
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(contains(m.status().message(), "central directory claims 65534 entries")) << m.status().message();
  // A member whose compressed size claims more bytes than the file has: a problem for that member.
  std::string sized = z;
  const size_t cd = sized.find(std::string("PK\x01\x02", 4));
  sized.replace(cd + 20, 4, le_bytes(0x7FFFFFF0, 4));
  sized.replace(cd + 24, 4, le_bytes(0x7FFFFFF0, 4));
  write_file(d / "sized.npz", sized);
  auto sz = parity::open_source(d / "sized.npz");
  ASSERT_TRUE(sz.ok()) << sz.status().ToString();
  ASSERT_EQ((*sz)->problems().size(), 1u);
  EXPECT_TRUE(contains((*sz)->problems()[0].message(), "lie outside the file")) << (*sz)->problems()[0].message();
  EXPECT_EQ((*sz)->records().size(), 4u);
}

// Issue 33 §3: a stored member's CRC-32 was never checked (a flipped data byte was read as data; numpy
// raises "Bad CRC-32"), and 200 directory entries over one deflate stream each passed the ratio check.
TEST_F(NpzFiles, StoredMemberWithABadCrcIsCorruptOthersStillLoad) {
  TempDir d;
  std::string stored = read_file(dir_->path() / "stored.npz");
  const size_t off = member_data_offset(stored, "a.npy");
  ASSERT_NE(off, std::string::npos);
  stored[off + 128 + 4] = static_cast<char>(stored[off + 128 + 4] ^ 0x01);  // one bit of a's data, past its header
  write_file(d / "crc.npz", stored);
  auto s = parity::open_source(d / "crc.npz");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto bad = (*s)->load(*find_record(**s, "a"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), parity::StatusCode::kCorrupt);
  EXPECT_TRUE(contains(bad.status().message(), "member 'a.npy': CRC-32 mismatch")) << bad.status().message();
  EXPECT_EQ(load_values(**s, "b"), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(NpzOverlap, MembersSharingOneStreamAreRefusedAtOnce) {
  TempDir d;
  // 60 entries of the central directory point at one deflated member of 4 M zeros (16 MiB inflated).
  ASSERT_EQ(run_python(d.path(), R"PY(
import io, struct
buf = io.BytesIO()
np.savez_compressed(buf, a=np.zeros(1 << 22, dtype='<f4'))
z = buf.getvalue()
eocd = z.rfind(b'PK\x05\x06')
cd_size, cd_off = struct.unpack('<II', z[eocd + 12:eocd + 20])
entry = z[cd_off:cd_off + cd_size]
n = struct.unpack('<H', entry[28:30])[0]
entries = [entry]
for k in range(1, 60):
    name = ('m%03d.npy' % k).encode()
    entries.append(entry[:28] + struct.pack('<H', len(name)) + entry[30:46] + name + entry[46 + n:])
cd = b''.join(entries)
open('overlap.npz', 'wb').write(z[:cd_off] + cd + z[eocd:eocd + 8] +
                                struct.pack('<HHII', len(entries), len(entries), len(cd), cd_off) + z[eocd + 20:])
)PY"), 0);
  auto s = parity::open_source(d / "overlap.npz");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->records().size(), 1u);  // the first entry; every other one shares its bytes
  ASSERT_EQ((*s)->problems().size(), 59u);
  EXPECT_TRUE(contains((*s)->problems()[0].message(), "member 'm001.npy': its data overlaps member 'a.npy'"))
      << (*s)->problems()[0].message();
}

}  // namespace
