// .npz reader: a zip archive of .npy members (numpy.savez: stored; numpy.savez_compressed: deflated).
// Stored members are viewed in place inside the file mapping (their CRC-32 checked on load); deflated
// members are listed by inflating only their .npy header, and inflated whole (CRC-checked) on load. Keys drop the ".npy" suffix, as
// numpy.load does.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "formats/inflate.h"
#include "formats/npy.h"
#include "formats/tensor_file_source.h"
#include "formats/zip_directory.h"
#include "parity/formats.h"

namespace parity::formats {
namespace {

// Zip-bomb cap (docs/formats.md "npz"): a deflated member that inflates more than kMaxRatio times AND to more
// than kCapFreeBytes is refused before any allocation, unless PARITY_NPZ_MAX_RATIO raises the ratio. Real
// tensors compress far less (float data 1–4:1; even all-zero tensors are rarely stored deflated at scale).
constexpr uint64_t kCapFreeBytes = uint64_t{64} << 20;
constexpr double kMaxRatio = 200.0;

Status check_inflation(uint64_t compressed, uint64_t inflated) {
  double max_ratio = kMaxRatio;
  if (const char* env = std::getenv("PARITY_NPZ_MAX_RATIO")) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end != env && *end == '\0' && v > 0) max_ratio = v;
  }
  if (inflated <= kCapFreeBytes) return Status::OK();
  const double ratio = static_cast<double>(inflated) / static_cast<double>(std::max<uint64_t>(compressed, 1));
  if (ratio <= max_ratio) return Status::OK();
  return Status::Invalid(fmt::format(
      "inflates {:.0f}:1 to {} bytes: refused as a possible zip bomb (more than {:g}:1 above {} MiB; set "
      "PARITY_NPZ_MAX_RATIO to allow it)", ratio, inflated, max_ratio, kCapFreeBytes >> 20));
}

bool probe_npz(const std::filesystem::path& p) { return has_extension(p, ".npz"); }

// Members whose data overlaps an earlier-starting member's: the overlapping-member zip bomb (one deflate
// stream referenced by many directory entries, each passing the ratio check: 200 entries over one 60 MiB
// stream took 50 s to compare, issue 33 §3). zip writers never share bytes between members, and Python's
// zipfile refuses such archives ("Overlapped entries"). Returns, per member, the name it overlaps ("" none).
std::vector<std::string> overlapping_members(const std::vector<ZipMember>& dir) {
  std::vector<size_t> order(dir.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return dir[a].data_offset < dir[b].data_offset; });
  std::vector<std::string> overlaps(dir.size());
  uint64_t reach = 0;  // the furthest data end among members starting earlier
  size_t reacher = SIZE_MAX;
  for (size_t i : order) {
    const ZipMember& m = dir[i];
    if (!m.problem.ok() || m.compressed_size == 0) continue;
    if (reacher != SIZE_MAX && m.data_offset < reach) overlaps[i] = dir[reacher].name;
    if (m.data_offset + m.compressed_size > reach) {
      reach = m.data_offset + m.compressed_size;
      reacher = i;
    }
  }
  return overlaps;
}

// The member's .npy header: read in place for stored members, inflated for deflated ones (first the
// fixed prefix for the header length, then exactly the header).
Result<NpyHeader> member_header(const MappedFile& file, const ZipMember& m, std::vector<std::byte>& scratch) {
  const std::byte* src = file.data() + m.data_offset;
  if (m.method == 0) return parse_npy_header(ByteRange{src, m.compressed_size});
  auto inflate_prefix = [&](uint64_t n) -> Result<ByteRange> {
    n = std::min(n, m.uncompressed_size);
    scratch.resize(n);
    PARITY_ASSIGN_OR_RETURN(uint64_t got, inflate_raw(src, m.compressed_size, scratch.data(), n));
    return ByteRange{scratch.data(), got};
  };
  PARITY_ASSIGN_OR_RETURN(ByteRange prefix, inflate_prefix(12));
  PARITY_ASSIGN_OR_RETURN(uint64_t end, npy_header_end(prefix));
  if (end > m.uncompressed_size) {
    return Status::Invalid("header length " + std::to_string(end) + " exceeds the member size (" +
                           std::to_string(m.uncompressed_size) + " bytes)");
  }
  PARITY_ASSIGN_OR_RETURN(ByteRange header, inflate_prefix(end));
  return parse_npy_header(header);
}

// Why a member cannot be read as stored (OK when it can): its own directory problem, overlap with another
// member, encryption, a method other than stored/deflated, sizes that contradict each other or the
// inflation a deflate stream can reach.
Status member_unreadable(const ZipMember& m, const std::string& overlapped) {
  if (!m.problem.ok()) return m.problem;
  if (!overlapped.empty())
    return Status::Invalid("its data overlaps member '" + overlapped + "': refused (overlapping members are a "
                           "zip bomb; no zip writer shares bytes between members)");
  if (m.encrypted) return Status::Unsupported("encrypted zip members are not supported");
  if (m.method != 0 && m.method != 8)
    return Status::Unsupported("zip compression method " + std::to_string(m.method) +
                               " is not supported (only stored and deflated)");
  if (m.method == 0 && m.compressed_size != m.uncompressed_size)
    return Status::Invalid("stored member has compressed size " + std::to_string(m.compressed_size) +
                           " but uncompressed size " + std::to_string(m.uncompressed_size));
  // Deflate cannot expand data by more than ~1032:1 (zlib technical details); a larger claim is a lie
  // that would make load() allocate a huge buffer.
  if (m.method == 8 && m.uncompressed_size / 1032 > m.compressed_size + 1024)
    return Status::Invalid("implausible uncompressed size " + std::to_string(m.uncompressed_size) + " for " +
                           std::to_string(m.compressed_size) + " compressed bytes");
  if (m.method == 8) return check_inflation(m.compressed_size, m.uncompressed_size);
  return Status::OK();
}

// The entry of a member whose header `h` was read: in place for stored members (their CRC checked on load
// over the whole member, as numpy's zipfile does), inflated on load for deflated ones.
TensorEntry member_entry(const ZipMember& m, const NpyHeader& h, const std::string& what) {
  TensorEntry e = npy_entry(h, what);
  e.key = m.name;
  if (has_extension(e.key, ".npy")) e.key.resize(e.key.size() - 4);
  e.crc32 = m.crc32;
  if (m.method == 0) {
    e.storage = TensorEntry::Storage::kInPlace;
    e.offset = m.data_offset + h.data_offset;
    e.size = h.data_bytes;
    e.crc_offset = m.data_offset;
    e.crc_size = m.compressed_size;
  } else {
    e.storage = TensorEntry::Storage::kDeflated;
    e.offset = m.data_offset;
    e.size = m.compressed_size;
    e.inflated_size = m.uncompressed_size;
    e.data_offset = h.data_offset;
  }
  return e;
}

// A name stored more than once: numpy (zipfile) reads the last copy, so parity does too, and says so.
// name -> (count, index of the last copy)
std::map<std::string, std::pair<size_t, size_t>> copies_by_name(const std::vector<ZipMember>& dir) {
  std::map<std::string, std::pair<size_t, size_t>> copies;
  for (size_t i = 0; i < dir.size(); ++i) {
    auto& [count, last] = copies[dir[i].name];
    ++count;
    last = i;
  }
  return copies;
}

Status list_npz(const MappedFile& file, std::vector<TensorEntry>& entries, std::vector<Status>& problems) {
  const std::string name = file.path().string();
  Result<std::vector<ZipMember>> dir = read_zip_directory(ByteRange{file.data(), file.size()});
  if (!dir.ok()) return dir.status().WithContext(name);
  std::map<std::string, std::pair<size_t, size_t>> copies = copies_by_name(*dir);
  const std::vector<std::string> overlaps = overlapping_members(*dir);
  std::vector<std::byte> scratch;
  for (size_t i = 0; i < dir->size(); ++i) {
    const ZipMember& m = (*dir)[i];
    if (!m.name.empty() && m.name.back() == '/') continue;  // a directory entry, no data
    const std::string what = name + ": member '" + m.name + "'";
    auto problem = [&](const Status& st) { problems.push_back(st.WithContext(what)); };
    if (const auto& [count, last] = copies[m.name]; count > 1) {
      if (i != last) continue;
      problem(Status::Invalid("stored " + std::to_string(count) +
                              " times; the last copy is read (as numpy does), the others are ignored"));
    }
    if (Status st = member_unreadable(m, overlaps[i]); !st.ok()) { problem(st); continue; }
    Result<NpyHeader> h = member_header(file, m, scratch);
    if (!h.ok()) { problem(h.status()); continue; }
    const uint64_t present = m.uncompressed_size - std::min(m.uncompressed_size, h->data_offset);
    if (h->data_bytes > present) {
      problem(Status::Invalid("header claims " + std::to_string(h->data_bytes) + " bytes of data (" +
                              shape_to_string(h->shape) + " " + dtype_name(h->dtype) + "), member has " +
                              std::to_string(present)));
      continue;
    }
    entries.push_back(member_entry(m, *h, what));
  }
  return Status::OK();
}

Result<std::unique_ptr<RecordSource>> open_npz(const std::filesystem::path& p) {
  return TensorFileSource::open(p, "npz", &list_npz, false);
}

}  // namespace

const FormatSpec& npz_format_spec() {
  static const FormatSpec spec{"npz", &probe_npz, &open_npz, false, false};
  return spec;
}

}  // namespace parity::formats
