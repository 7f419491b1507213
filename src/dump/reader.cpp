// RunReader: a capture run as a RecordSource (format "parity-run").
//
// Reads each part's manifest up to the first torn or corrupt frame (reported in problems(), never
// fatal), checks that every data reference lies inside its shard, and maps shards read-only on demand:
// memory use is bounded by the tensors being looked at, not by the size of the run.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <exception>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "dump/event_json.h"
#include "dump/manifest_record.h"
#include "parity/dump.h"
#include "parity/json_depth.h"
#include "parity/json_number.h"
#include "parity/regular_file.h"
#include "parity/schemas.h"

namespace parity::dump {
namespace fs = std::filesystem;

namespace {

// JSON text with the non-standard tokens NaN, Infinity and -Infinity (Python's json.dumps writes them)
// outside string literals replaced by the strings "nan", "inf", "-inf".
std::string quote_bare_nonfinite(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 16);
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (text.compare(i, 3, "NaN") == 0) { out += "\"nan\""; i += 2; continue; }
    if (text.compare(i, 8, "Infinity") == 0) { out += "\"inf\""; i += 7; continue; }
    if (text.compare(i, 9, "-Infinity") == 0) { out += "\"-inf\""; i += 8; continue; }
    out += c;
  }
  return out;
}

}  // namespace

namespace {

struct Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr && addr != MAP_FAILED) ::munmap(addr, size);
  }
};

// "rank12" -> 12; anything else -> -1.
int rank_of_dir(const std::string& name) {
  if (name.size() <= 4 || name.rfind("rank", 0) != 0) return -1;
  int r = 0;
  for (size_t i = 4; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || r > 1000000) return -1;
    r = r * 10 + (name[i] - '0');
  }
  return r;
}

std::string jstr(const nlohmann::json& j, const char* k) {
  auto it = j.find(k);
  return (it != j.end() && it->is_string()) ? it->get<std::string>() : std::string();
}
int64_t jint(const nlohmann::json& j, const char* k, int64_t dflt) {
  auto it = j.find(k);
  return (it != j.end() && it->is_number_integer()) ? it->get<int64_t>() : dflt;
}

}  // namespace

namespace {

// What the manifest says of a record that a Record does not hold. A million records repeat a handful
// of shard names, devices, argument lists and strides: each is kept once per part (PartTables) and an
// entry holds their numbers (20 bytes, where four strings and a vector took 136 and a heap block or two).
// Where the bytes lie is a DataEntry of its own, which only records with tensor data have (a
// statistics-mode dump has none: its entries took 40 bytes a record when every entry had room for one).
struct Entry {
  static constexpr uint32_t kNoData = UINT32_MAX;
  uint32_t part = 0;
  uint32_t device = 0, args = 0;  // into the part's texts (0 = "")
  uint32_t stride = 0;            // into the part's strides (0 = none)
  uint32_t data = kNoData;        // into the data entries
};
struct DataEntry {
  uint32_t shard = 0;  // into the part's texts
  uint64_t offset = 0, nbytes = 0;
};

// A part's distinct texts and strides, numbered in order of first use; number 0 is "" / no stride.
struct PartTables {
  std::vector<std::string> texts{""};
  std::vector<std::vector<int64_t>> strides{{}};

  uint32_t text(std::string&& s) { return number(std::move(s), texts, text_ids_); }
  uint32_t stride(std::vector<int64_t>&& s) { return number(std::move(s), strides, stride_ids_); }
  void drop_lookups() {  // once the part is listed, only the numbered values are needed
    text_ids_ = {};
    stride_ids_ = {};
  }

 private:
  template <typename T, typename Ids>
  static uint32_t number(T&& value, std::vector<T>& values, Ids& ids) {
    if (value.empty()) return 0;
    auto [it, added] = ids.try_emplace(value, static_cast<uint32_t>(values.size()));
    if (added) values.push_back(std::move(value));
    return it->second;
  }
  struct StrideHash {
    size_t operator()(const std::vector<int64_t>& v) const {
      size_t h = v.size();
      for (int64_t x : v) h = h * 1000003u ^ std::hash<int64_t>{}(x);
      return h;
    }
  };
  std::unordered_map<std::string, uint32_t> text_ids_;
  std::unordered_map<std::vector<int64_t>, uint32_t, StrideHash> stride_ids_;
};

// The identity of a part's events as docs/dump-format.md defines it — a step that is an integer from 0,
// the rank of the folder they lie in, a name unique within (rank, step), the header first — checked as
// they are read. A record that breaks it is still read (nothing captured is dropped), under one problem
// per kind of breach and part, with the count and the first example (issue 33 §8: these were accepted
// silently, and a duplicate name was paired by occurrence with whatever its twin met on the other side).
class EventIdentityCheck {
 public:
  EventIdentityCheck(const fs::path& manifest, int folder_rank) : manifest_(manifest.string()), folder_rank_(folder_rank) {}

  void event_before_header(size_t record) {
    if (!first_before_header_) first_before_header_ = record;
  }
  // The record's step; a missing, negative or non-integer one (1e300) reads as no step (-1).
  int64_t step(size_t record, const detail::ManifestRecord& j) {
    if (j.step && *j.step >= 0) return *j.step;
    note(bad_step_, record, j.name);
    return -1;
  }
  // The folder's rank where the folder names one (rank<R>/), else the record's own.
  int rank(size_t record, const detail::ManifestRecord& j, int part_rank) {
    const bool in_range = j.rank && *j.rank >= 0 && *j.rank <= std::numeric_limits<int>::max();
    if (folder_rank_ >= 0) {
      if (j.rank && *j.rank != folder_rank_) note(wrong_rank_, record, j.name + " says rank " + std::to_string(*j.rank));
      return folder_rank_;
    }
    if (j.rank && !in_range) note(bad_rank_, record, j.name);
    return in_range ? static_cast<int>(*j.rank) : part_rank;
  }
  void finish(const SpillVector<Record>& records, bool seen_header, std::vector<Status>& problems) const {
    if (first_before_header_ && seen_header)
      problems.push_back(Status::Corrupt(fmt::format(
          "{}: record {} is an event before the header record; the part was not written by one writer from its "
          "start", manifest_, *first_before_header_)));
    report(bad_step_, "have a step that is missing, negative or not an integer; read as no step", problems);
    report(wrong_rank_, fmt::format("lie in rank{}/ but name another rank; read as rank {}", folder_rank_, folder_rank_), problems);
    report(bad_rank_, "have a rank that is negative or not an integer; read as the part's rank", problems);
    duplicates(records, problems);
  }

 private:
  struct Breach {
    size_t count = 0, first = 0;
    std::string what;  // the first record's name (and detail)
  };
  static void note(Breach& b, size_t record, const std::string& what) {
    if (b.count++ == 0) {
      b.first = record;
      b.what = what;
    }
  }
  void report(const Breach& b, const std::string& text, std::vector<Status>& problems) const {
    if (b.count == 0) return;
    problems.push_back(Status::Corrupt(fmt::format("{}: {} event record(s) {} (first: record {}, \"{}\")", manifest_,
                                                   b.count, text, b.first, b.what)));
  }
  // Names repeated within one (rank, step): names are interned, so equal names are one address.
  void duplicates(const SpillVector<Record>& records, std::vector<Status>& problems) const {
    struct Key {
      int rank;
      int64_t step;
      uintptr_t name;  // the interned name's address, ordered as an integer
      size_t at;
    };
    std::vector<Key> keys;
    keys.reserve(records.size());
    for (size_t k = 0; k < records.size(); ++k)
      keys.push_back({records[k].rank, records[k].step, reinterpret_cast<uintptr_t>(&records[k].name.str()), k});
    auto same = [](const Key& a, const Key& b) { return a.rank == b.rank && a.step == b.step && a.name == b.name; };
    std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
      return std::tie(a.rank, a.step, a.name, a.at) < std::tie(b.rank, b.step, b.name, b.at);
    });
    size_t repeats = 0;
    const Key* example = nullptr;
    for (size_t k = 1; k < keys.size(); ++k)
      if (same(keys[k - 1], keys[k]) && repeats++ == 0) example = &keys[k];
    if (repeats == 0) return;
    problems.push_back(Status::Corrupt(fmt::format(
        "{}: {} event name(s) repeat within their (rank, step) (e.g. \"{}\", rank {}, step {}); names are unique "
        "within (rank, step) in a parity run, and the repeats are paired in the order they were written",
        manifest_, repeats, records[example->at].name.str(), example->rank, example->step)));
  }

  std::string manifest_;
  int folder_rank_;
  std::optional<size_t> first_before_header_;
  Breach bad_step_, wrong_rank_, bad_rank_;
};

// What one part (rank folder) lists, on its own: parts are read in parallel and merged in rank order, so
// record handles and part indices are local here (RunReader::Impl::add makes them global).
struct PartListing {
  // Spill-allocated (parity/spill.h): their pages go as soon as they are merged into the run's lists.
  SpillVector<Record> records;  // handle: index into entries
  std::vector<Status> problems;
  PartSummary part;
  std::vector<ScalarRecord> scalars;
  std::optional<std::string> fingerprint;
  SpillVector<Entry> entries;
  SpillVector<DataEntry> data;
  PartTables tables;

  void read(int rank, const fs::path& dir) {
    part.rank = rank;
    part.dir = dir;
    if (!read_manifest(rank, dir)) return;
    if (fs::exists(dir / "scalars.pfr")) read_scalars(rank, dir / "scalars.pfr");
    if (fs::exists(dir / "environment.pfr")) read_environment(dir / "environment.pfr");
  }

 private:
  // One manifest frame as a record; false (with the problem noted) when it is not a JSON object.
  bool decode(const std::string& manifest, size_t i, const std::string& payload, detail::ManifestRecord& j) {
    if (detail::decode_manifest_record_fast(payload, j)) return true;  // else: as nlohmann reads it
    if (const std::string deep = json_depth_problem(payload); !deep.empty()) {
      problems.push_back(Status::Corrupt(fmt::format("{}: record {}: {}; skipped", manifest, i, deep)));
      return false;
    }
    if (detail::decode_manifest_record_reference(payload, j)) return true;
    problems.push_back(Status::Corrupt(fmt::format("{}: record {} is not a JSON object", manifest, i)));
    return false;
  }

  // A header or close record: each appears once, else two writers wrote the part at once.
  void header_or_close(const std::string& manifest, size_t i, const detail::ManifestRecord& j, bool& seen_header) {
    const bool header = j.kind == "header";
    bool& seen = header ? seen_header : part.closed;
    if (seen)
      problems.push_back(Status::Corrupt(fmt::format(
          "{}: record {} is a second {} record; the part was written by two writers at once and its "
          "records cannot be trusted", manifest, i, header ? "header" : "close")));
    seen = true;
    if (header && !is_readable_dump_schema(j.schema))
      problems.push_back(Status::Unsupported(fmt::format("{}: schema \"{}\", this parity reads \"{}\" "
                                                         "and its minor versions up to \"{}\"",
                                                         manifest, j.schema, schemas::kDumpMajor.id, schemas::kDump.id)));
  }

  // The record's stored CRC-32C, 8 hex digits.
  void attach_crc(const std::string& manifest, const std::string& hex, Record& r) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(hex.c_str(), &end, 16);
    if (hex.size() == 8 && end == hex.c_str() + 8)
      r.crc32c = static_cast<uint32_t>(v);
    else
      problems.push_back(Status::Corrupt(fmt::format("{}: {}: crc32c \"{}\" is not 8 hex digits", manifest, r.name, hex)));
  }

  // The size of a data shard of this part (-1 when it cannot be read), looked up once a shard.
  int64_t shard_size(const fs::path& dir, const std::string& name) {
    auto it = shard_sizes_.find(name);
    if (it != shard_sizes_.end()) return static_cast<int64_t>(it->second);
    std::error_code ec;
    const auto sz = fs::file_size(dir / name, ec);
    if (ec) return -1;
    shard_sizes_[name] = sz;
    return static_cast<int64_t>(sz);
  }

  // The record's tensor bytes in a shard, when they are where the manifest says and as many as its
  // shape needs; otherwise the problem is noted and the record keeps its statistics only.
  void attach_data(const std::string& manifest, const fs::path& dir, const detail::ManifestRecord& j, Record& r,
                   Entry& e) {
    const std::string& shard = j.shard;
    DataEntry d;
    d.shard = tables.text(std::string(shard));
    d.offset = static_cast<uint64_t>(j.offset.value_or(-1));
    d.nbytes = static_cast<uint64_t>(j.nbytes.value_or(-1));
    const auto numel = shape_numel(r.shape);
    const int64_t have = shard_size(dir, shard);
    if (!numel.ok() || static_cast<int64_t>(d.nbytes) != *numel * dtype_size(r.dtype)) {
      problems.push_back(Status::Corrupt(fmt::format("{}: {}: data holds {} bytes, shape {} x {} needs otherwise",
                                                     manifest, r.name, d.nbytes, shape_to_string(r.shape),
                                                     dtype_name(r.dtype))));
    } else if (shard.find('/') != std::string::npos || have < 0) {
      problems.push_back(Status::NotFound(fmt::format("{}: {}: data shard \"{}\" is missing", manifest, r.name, shard)));
    } else if (d.offset % kDataAlignment != 0 || d.offset > static_cast<uint64_t>(have) ||
               d.nbytes > static_cast<uint64_t>(have) - d.offset) {  // no offset + nbytes: it may wrap
      problems.push_back(Status::Corrupt(fmt::format(
          "{}: {}: {} bytes at offset {} lie outside {} ({} bytes) or are misaligned", manifest, r.name, d.nbytes,
          d.offset, shard, have)));
    } else {
      r.has_data = true;
      r.file = (dir / shard).string();
      part.data_bytes += d.nbytes;
      e.data = static_cast<uint32_t>(data.size());
      data.push_back(d);
    }
  }

  // One event record into the part's lists; false (a problem noted) when it has no name or dtype.
  bool add_event(const fs::path& dir, size_t i, detail::ManifestRecord& j, int64_t step, int rank) {
    const std::string manifest = (dir / "manifest.pfr").string();
    Record r;
    r.name = std::move(j.name);
    r.module = std::move(j.module);
    r.op = std::move(j.op);
    r.direction = std::move(j.direction);
    r.role = std::move(j.role);
    r.index = static_cast<int>(j.index.value_or(-1));
    r.step = step;
    r.rank = rank;
    r.order = j.order.value_or(-1);
    r.file = manifest;
    const auto dt = dtype_from_name(j.dtype);
    if (r.name.empty() || !dt) {
      problems.push_back(Status::Corrupt(fmt::format("{}: record {} ({}) has no name or an unknown dtype \"{}\"",
                                                     manifest, i, r.name, j.dtype)));
      return false;
    }
    r.dtype = *dt;
    Entry e;
    r.shape = std::move(j.shape);
    e.stride = tables.stride(std::move(j.stride));
    e.device = tables.text(std::move(j.device));
    if (j.args) e.args = tables.text(std::move(*j.args));
    r.stats = j.stats;
    if (j.crc32c) attach_crc(manifest, *j.crc32c, r);
    if (j.has_data) attach_data(manifest, dir, j, r, e);
    r.handle = entries.size();
    entries.push_back(std::move(e));
    ++part.events;
    ++part.events_by_kind[r.direction + "/" + r.role];
    records.push_back(std::move(r));
    return true;
  }

  // manifest.pfr: the header, the events and the close record; false when it cannot be read at all.
  bool read_manifest(int rank, const fs::path& dir) {
    const fs::path manifest = dir / "manifest.pfr";
    auto scan = scan_frames(manifest);
    if (!scan.ok()) {
      problems.push_back(scan.status());
      return false;
    }
    part.manifest_bytes = scan->file_bytes;
    part.manifest_valid_bytes = scan->valid_bytes;
    part.manifest_tail = scan->tail_problem;
    if (!scan->tail_problem.empty())
      problems.push_back(Status::Corrupt(fmt::format("{}: {}; {} complete records before it are used",
                                                     manifest.string(), scan->tail_problem, scan->payloads.size())));
    std::set<int64_t> steps;
    bool seen_header = false;
    EventIdentityCheck identity(manifest, rank_of_dir(dir.filename().string()));
    // At most one record a frame: one allocation for each list (pages of its own when large), not a
    // series of doublings.
    records.reserve(scan->payloads.size());
    entries.reserve(scan->payloads.size());  // (data entries grow: statistics-mode records have none)
    for (size_t i = 0; i < scan->payloads.size(); ++i) {
      detail::ManifestRecord j;
      if (!decode(manifest.string(), i, scan->payloads[i], j)) continue;
      if (j.kind == "header" || j.kind == "close") {
        header_or_close(manifest.string(), i, j, seen_header);
        continue;
      }
      if (j.kind != "event") continue;  // unknown kinds are skipped: newer writers may add some
      if (!seen_header) identity.event_before_header(i);
      const int64_t step = identity.step(i, j);
      const int event_rank = identity.rank(i, j, rank);
      if (add_event(dir, i, j, step, event_rank)) steps.insert(step);
    }
    if (!seen_header && !scan->payloads.empty())
      problems.push_back(Status::Corrupt(fmt::format("{}: the header record is missing", manifest.string())));
    identity.finish(records, seen_header, problems);
    part.steps.assign(steps.begin(), steps.end());
    return true;
  }

  // The scalars of one record of scalars.pfr as a JSON object (nullopt, with the problem noted, when
  // they are not one). The writer keeps text that was not valid JSON verbatim; older captures wrote a
  // list holding a NaN as a bare NaN token: read NaN/Infinity as "nan"/"inf" (the writer's convention)
  // and say so.
  std::optional<nlohmann::json> scalar_values(const fs::path& file, size_t i, int64_t step, nlohmann::json& j) {
    nlohmann::json values = j.contains("values") ? j["values"] : nlohmann::json::object();
    if (values.is_string()) {
      nlohmann::json fixed = nlohmann::json::parse(quote_bare_nonfinite(values.get<std::string>()), nullptr, false);
      if (!fixed.is_discarded() && fixed.is_object()) {
        problems.push_back(Status::Corrupt(fmt::format(
            "{}: record {} (step {}): the scalars are not valid JSON (a bare NaN or Infinity); read with those "
            "values as strings", file.string(), i, step)));
        values = std::move(fixed);
      }
    }
    if (values.is_object()) return values;
    problems.push_back(Status::Corrupt(fmt::format(
        "{}: record {} (step {}): the scalars are not a JSON object; skipped", file.string(), i, step)));
    return std::nullopt;
  }

  // The JSON object of frame i of `file`, or nullopt with the problem noted.
  std::optional<nlohmann::json> frame_object(const fs::path& file, size_t i, const std::string& payload) {
    if (const std::string deep = json_depth_problem(payload); !deep.empty()) {
      problems.push_back(Status::Corrupt(fmt::format("{}: record {}: {}; skipped", file.string(), i, deep)));
      return std::nullopt;
    }
    nlohmann::json j = nlohmann::json::parse(payload, nullptr, false);
    if (!j.is_discarded() && j.is_object()) return j;
    problems.push_back(Status::Corrupt(fmt::format("{}: record {} is not a JSON object", file.string(), i)));
    return std::nullopt;
  }

  // The frames of scalars.pfr or environment.pfr (nullopt when it cannot be read); a torn tail is noted.
  std::optional<FrameScan> scan_side_file(const fs::path& file) {
    auto scan = scan_frames(file);
    if (!scan.ok()) {
      problems.push_back(scan.status());
      return std::nullopt;
    }
    if (!scan->tail_problem.empty())
      problems.push_back(Status::Corrupt(fmt::format("{}: {}", file.string(), scan->tail_problem)));
    return std::move(*scan);
  }

  // scalars.pfr: the scalars logged at each step.
  void read_scalars(int rank, const fs::path& file) {
    const auto sc = scan_side_file(file);
    if (!sc) return;
    for (size_t i = 0; i < sc->payloads.size(); ++i) {
      std::optional<nlohmann::json> j = frame_object(file, i, sc->payloads[i]);
      if (!j || jstr(*j, "kind") != "scalars") continue;
      const int64_t step = jint(*j, "step", -1);
      const std::optional<nlohmann::json> values = scalar_values(file, i, step, *j);
      if (!values) continue;
      scalars.push_back({rank, step, json_text(*values)});
      ++part.scalar_records;
    }
  }

  // environment.pfr: the last complete fingerprint wins.
  void read_environment(const fs::path& file) {
    const auto ev = scan_side_file(file);
    if (!ev) return;
    for (size_t k = 0; k < ev->payloads.size(); ++k) {
      const auto& p = ev->payloads[k];
      if (const std::string deep = json_depth_problem(p); !deep.empty()) {
        problems.push_back(Status::Corrupt(fmt::format("{}: record {}: {}; skipped", file.string(), k, deep)));
        continue;
      }
      nlohmann::json j = nlohmann::json::parse(p, nullptr, false);
      if (!j.is_discarded() && jstr(j, "kind") == "fingerprint" && j.contains("fingerprint"))
        fingerprint = j["fingerprint"].dump();
    }
  }

  std::map<std::string, uint64_t> shard_sizes_;
};

}  // namespace

struct RunReader::Impl {
  fs::path root;
  RecordList records;
  std::vector<Status> problems;
  std::vector<PartSummary> parts;
  std::vector<ScalarRecord> scalars;
  std::map<int, std::string> fingerprints;
  SpillVector<Entry> entries;
  SpillVector<DataEntry> data;
  std::vector<PartTables> tables;  // by part (Entry::part)
  mutable std::mutex map_mu;
  mutable std::map<fs::path, std::shared_ptr<Mapping>> maps;

  // Appends a part's listing after the parts added before it.
  void add(int rank, PartListing&& l) {
    const size_t part = parts.size(), base = entries.size(), data_base = data.size();
    for (Entry& e : l.entries) {
      e.part = static_cast<uint32_t>(part);
      if (e.data != Entry::kNoData) e.data += static_cast<uint32_t>(data_base);
      entries.push_back(e);
    }
    data.insert(data.end(), l.data.begin(), l.data.end());
    l.tables.drop_lookups();
    tables.push_back(std::move(l.tables));
    for (Record& r : l.records) {
      r.handle += base;
      records.push_back(std::move(r));
    }
    for (Status& st : l.problems) problems.push_back(std::move(st));
    for (ScalarRecord& sc : l.scalars) scalars.push_back(std::move(sc));
    if (l.fingerprint) fingerprints[rank] = std::move(*l.fingerprint);
    parts.push_back(std::move(l.part));
  }

  Result<std::shared_ptr<Mapping>> map_file(const fs::path& file) const {
    std::lock_guard<std::mutex> lk(map_mu);
    auto it = maps.find(file);
    if (it != maps.end()) return it->second;
    PARITY_ASSIGN_OR_RETURN(const RegularFile f, open_regular_file(file));  // never opens a FIFO
    const int fd = f.fd;
    auto m = std::make_shared<Mapping>();
    m->size = static_cast<size_t>(f.size);
    if (m->size > 0) {
      m->addr = ::mmap(nullptr, m->size, PROT_READ, MAP_SHARED, fd, 0);
      if (m->addr == MAP_FAILED) {
        const int e = errno;
        ::close(fd);
        m->addr = nullptr;
        return Status::IOError(fmt::format("{}: cannot map: {}", file.string(), std::strerror(e)));
      }
    }
    ::close(fd);
    maps[file] = m;
    return m;
  }
};

RunReader::RunReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunReader::~RunReader() = default;

namespace {

// A part is a folder with an entry named manifest.pfr of any type: a FIFO, a directory or a symlink loop
// there is the part's problem, named when the part is read ("not a regular file (a FIFO)"), not a
// reason to read the folder as something else that then holds nothing (issue 33 §2).
bool has_manifest(const fs::path& dir) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir / "manifest.pfr", ec);
  return !ec && fs::exists(st);
}

}  // namespace

bool is_run_directory(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return false;
  if (has_manifest(path)) return true;
  for (const auto& e : fs::directory_iterator(path, ec))
    if (e.is_directory() && rank_of_dir(e.path().filename().string()) >= 0 && has_manifest(e.path())) return true;
  return false;
}

namespace {

// The (rank, folder) parts of a run directory, sorted by rank; a part directory is its own single part.
std::vector<std::pair<int, fs::path>> find_parts(const fs::path& run_dir) {
  std::error_code ec;
  std::vector<std::pair<int, fs::path>> found;
  if (has_manifest(run_dir)) {
    const int r = rank_of_dir(run_dir.filename().string());
    found.emplace_back(r < 0 ? 0 : r, run_dir);
  } else {
    for (const auto& e : fs::directory_iterator(run_dir, ec)) {
      const int r = rank_of_dir(e.path().filename().string());
      if (r >= 0 && e.is_directory() && has_manifest(e.path()))
        found.emplace_back(r, e.path());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

std::vector<RankPart> run_rank_parts(const fs::path& run_dir) {
  std::vector<RankPart> parts;
  for (const auto& [rank, dir] : find_parts(run_dir)) {
    RankPart p{rank, 0};
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const uintmax_t n = e.is_regular_file(ec) ? e.file_size(ec) : 0;
      if (!ec) p.bytes += static_cast<int64_t>(n);
    }
    parts.push_back(p);
  }
  return parts;
}

Result<std::unique_ptr<RunReader>> RunReader::open(const fs::path& run_dir) { return open_parts(run_dir, nullptr); }

Result<std::unique_ptr<RunReader>> RunReader::open_ranks(const fs::path& run_dir, const std::vector<int>& ranks) {
  return open_parts(run_dir, &ranks);
}

Result<std::unique_ptr<RunReader>> RunReader::open_parts(const fs::path& run_dir, const std::vector<int>* ranks) {
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec))
    return Status::NotFound(fmt::format("{}: no such run directory", run_dir.string()));
  const std::vector<std::pair<int, fs::path>> found = find_parts(run_dir);
  if (found.empty())
    return Status::NotFound(fmt::format("{}: not a parity run (no rank<R>/manifest.pfr inside)", run_dir.string()));
  std::vector<std::pair<int, fs::path>> chosen;
  for (const auto& part : found)
    if (ranks == nullptr || std::binary_search(ranks->begin(), ranks->end(), part.first)) chosen.push_back(part);
  // Parts are independent: read by all threads (a 1,000-rank run lists 1,000 manifests), merged in rank
  // order, so the listing is the same whatever the thread count.
  std::vector<PartListing> listings(chosen.size());
  const int64_t n = static_cast<int64_t>(chosen.size());
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
  for (int64_t k = 0; k < n; ++k) {
    PartListing& l = listings[static_cast<size_t>(k)];
    const auto& [rank, dir] = chosen[static_cast<size_t>(k)];
    l.part.rank = rank;
    l.part.dir = dir;
    try {
      l.read(rank, dir);
    } catch (const std::exception& e) {  // never out of a parallel region; one part never stops the rest
      l.problems.push_back(Status::Internal(fmt::format("{}: cannot list: {}", (dir / "manifest.pfr").string(), e.what())));
    }
  }
  auto impl = std::make_unique<Impl>();
  impl->root = run_dir;
  size_t records = 0;
  for (const PartListing& l : listings) records += l.records.size();
  impl->records.reserve(records);  // no regrowth while the parts' own lists are still held
  impl->entries.reserve(records);
  size_t data_entries = 0;
  for (const PartListing& l : listings) data_entries += l.data.size();
  if (data_entries >= Entry::kNoData)
    return Status::Unsupported(fmt::format("{}: {} records with tensor data; this parity lists at most {}",
                                           run_dir.string(), data_entries, Entry::kNoData - 1));
  impl->data.reserve(data_entries);
  for (size_t k = 0; k < chosen.size(); ++k) {
    impl->add(chosen[k].first, std::move(listings[k]));
    listings[k] = PartListing{};  // its moved-from records go now, not at the end
  }
  return std::unique_ptr<RunReader>(new RunReader(std::move(impl)));
}

std::string RunReader::describe() const { return impl_->root.string() + " (parity-run)"; }
const RecordList& RunReader::records() const { return impl_->records; }
const std::vector<Status>& RunReader::problems() const { return impl_->problems; }
const std::vector<PartSummary>& RunReader::parts() const { return impl_->parts; }
const std::vector<ScalarRecord>& RunReader::scalars() const { return impl_->scalars; }
std::map<int, std::string> RunReader::fingerprints() const { return impl_->fingerprints; }

std::optional<std::string> RunReader::fingerprint_json() const {
  if (impl_->fingerprints.empty()) return std::nullopt;
  return impl_->fingerprints.begin()->second;
}

const std::string& RunReader::args_json(const Record& r) const {
  static const std::string empty;
  if (r.handle >= impl_->entries.size()) return empty;
  const Entry& e = impl_->entries[r.handle];
  return impl_->tables[e.part].texts[e.args];
}
std::string RunReader::device(const Record& r) const {
  if (r.handle >= impl_->entries.size()) return std::string();
  const Entry& e = impl_->entries[r.handle];
  return impl_->tables[e.part].texts[e.device];
}
std::vector<int64_t> RunReader::stride(const Record& r) const {
  if (r.handle >= impl_->entries.size()) return {};
  const Entry& e = impl_->entries[r.handle];
  return impl_->tables[e.part].strides[e.stride];
}

std::optional<RunReader::DataLocation> RunReader::data_location(const Record& r) const {
  if (!r.has_data || r.handle >= impl_->entries.size() || impl_->entries[r.handle].data == Entry::kNoData)
    return std::nullopt;
  const Entry& e = impl_->entries[r.handle];
  const DataEntry& d = impl_->data[e.data];
  return DataLocation{impl_->parts[e.part].dir / impl_->tables[e.part].texts[d.shard], d.offset, d.nbytes};
}

Result<TensorView> RunReader::load(const Record& r) const {
  if (!r.has_data || r.handle >= impl_->entries.size() || impl_->entries[r.handle].data == Entry::kNoData)
    return Status::NotFound(fmt::format("{}: {}: the record has no tensor data (statistics or checksum mode)",
                                        r.file, r.name));
  const Entry& e = impl_->entries[r.handle];
  const DataEntry& d = impl_->data[e.data];
  const fs::path file = impl_->parts[e.part].dir / impl_->tables[e.part].texts[d.shard];
  PARITY_ASSIGN_OR_RETURN(auto m, impl_->map_file(file));
  if (d.offset + d.nbytes > m->size)
    return Status::Corrupt(fmt::format("{}: {}: bytes [{}, {}) lie outside the file ({} bytes)", file.string(),
                                       r.name, d.offset, d.offset + d.nbytes, m->size));
  TensorView v;
  v.dtype = r.dtype;
  v.shape = r.shape;
  v.numel = d.nbytes / static_cast<uint64_t>(dtype_size(r.dtype));
  v.data = static_cast<const std::byte*>(m->addr) + d.offset;
  v.owner = std::shared_ptr<const void>(m, m->addr);
  v.file_mapped = true;  // PROT_READ mapping of the shard
  return v;
}

namespace {
bool probe_run(const fs::path& p) { return is_run_directory(p); }
Result<std::unique_ptr<RecordSource>> open_run(const fs::path& p) {
  PARITY_ASSIGN_OR_RETURN(auto r, RunReader::open(p));
  return std::unique_ptr<RecordSource>(std::move(r));
}
Result<std::unique_ptr<RecordSource>> open_run_ranks(const fs::path& p, const std::vector<int>& ranks) {
  PARITY_ASSIGN_OR_RETURN(auto r, RunReader::open_ranks(p, ranks));
  return std::unique_ptr<RecordSource>(std::move(r));
}
FormatSpec make_run_format_spec() {
  FormatSpec spec{"parity-run", &probe_run, &open_run, true};
  spec.rank_parts = &run_rank_parts;
  spec.open_ranks = &open_run_ranks;
  return spec;
}
}  // namespace

const FormatSpec& run_format_spec() {
  static const FormatSpec spec = make_run_format_spec();
  return spec;
}

}  // namespace parity::dump
