// Python face of the dump: the background writer used by parity.capture and the reader behind
// parity.load. Every call that touches tensor bytes or files releases the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "parity/dump.h"
#include "raise_status.h"

namespace py = pybind11;
using namespace parity;

namespace {

using parity_py::check_status;
using parity_py::raise_status;

DType parse_dtype(const std::string& s) {
  auto d = dtype_from_name(s);
  if (!d) throw py::value_error("unknown dtype \"" + s + "\"");
  return *d;
}

py::dict stats_dict(const TensorStats& s) {
  py::dict d;
  d["min"] = s.min; d["max"] = s.max; d["mean"] = s.mean; d["l2norm"] = s.l2norm; d["absmax"] = s.absmax;
  d["nan"] = s.nan_count; d["inf"] = s.inf_count; d["zero"] = s.zero_count;
  d["subnormal"] = s.subnormal_count; d["numel"] = s.numel;
  return d;
}

// Order of the statistics vector the Python side computes on a device (parity/_stats.py).
TensorStats stats_from_list(const std::vector<double>& v, int64_t numel) {
  if (v.size() != 9) throw py::value_error("stats must have 9 values: min max mean l2norm absmax nan inf zero subnormal");
  TensorStats s;
  s.min = v[0]; s.max = v[1]; s.mean = v[2]; s.l2norm = v[3]; s.absmax = v[4];
  s.nan_count = static_cast<int64_t>(v[5]); s.inf_count = static_cast<int64_t>(v[6]);
  s.zero_count = static_cast<int64_t>(v[7]); s.subnormal_count = static_cast<int64_t>(v[8]);
  s.numel = numel;
  return s;
}

class PyWriter {
 public:
  PyWriter(const std::string& run_dir, int rank, bool overwrite, uint64_t queue_bytes, uint64_t shard_bytes) {
    dump::WriterOptions o;
    o.rank = rank;
    o.overwrite = overwrite;
    o.queue_bytes = queue_bytes;
    o.shard_bytes = shard_bytes;
    auto w = dump::DumpWriter::create(run_dir, o);
    check_status(w.status());
    w_ = std::move(w).value();
  }

  // One event. `ptr` (an address from tensor.data_ptr(), 0 = none) points at `numel` C-contiguous
  // native elements of `dtype` on the host, or with `strided` at element [0, ..., 0] of a tensor laid out
  // by `shape` and `stride` (elements); the caller keeps the tensor alive for the call. Statistics are
  // computed here from `ptr` unless given in `stats`; the CRC and the copy of the bytes for tensor mode
  // are taken here too (a strided tensor gathered into C order first), all in one call with the GIL
  // released.
  py::dict append_event(const std::string& name, const std::string& module, const std::string& op,
                        const std::string& direction, const std::string& role, int index, int call, int64_t step,
                        int64_t order, const std::string& dtype, std::vector<int64_t> shape,
                        std::vector<int64_t> stride, const std::string& device, uintptr_t ptr, int64_t numel,
                        std::optional<std::vector<double>> stats, bool want_crc, bool want_data,
                        const std::string& args_json, const std::string& extra_json,
                        std::optional<uint32_t> crc, bool strided) {
    alive();
    dump::EventMeta m;
    m.name = name; m.module = module; m.op = op; m.direction = direction; m.role = role;
    m.index = index; m.call = call; m.step = step; m.order = order;
    m.dtype = parse_dtype(dtype);
    m.shape = std::move(shape);
    m.stride = std::move(stride);
    m.device = device;
    m.args_json = args_json;
    m.extra_json = extra_json;
    if (crc) {  // known already (the same tensor recorded under another name): not recomputed
      m.crc32c = *crc;
      want_crc = false;
    }
    if ((want_crc || want_data || !stats) && ptr == 0 && numel > 0)
      throw py::value_error(name + ": no host buffer given for statistics, checksum or data");
    const uint64_t nbytes = static_cast<uint64_t>(numel) * static_cast<uint64_t>(dtype_size(m.dtype));
    const void* p = reinterpret_cast<const void*>(ptr);
    if (stats) m.stats = stats_from_list(*stats, numel);
    if (strided && m.shape.size() != m.stride.size()) throw py::value_error(name + ": shape and stride differ in length");
    Status st;
    {
      py::gil_scoped_release nogil;
      dump::Buffer buf;
      if ((want_data || (want_crc && strided)) && nbytes > 0) {
        // The snapshot (the tensor may be modified in place later), in C order: what the CRC covers and the
        // shard stores; statistics then come from it too.
        buf = dump::Buffer::allocate(nbytes);
        if (strided) dump::gather_contiguous(m.dtype, p, m.shape, m.stride, buf.bytes.get());
        else std::memcpy(buf.bytes.get(), p, nbytes);
        p = buf.bytes.get();
        strided = false;
      }
      if (!m.stats) m.stats = strided ? dump::fused_stats_strided(m.dtype, p, m.shape, m.stride)
                                      : dump::fused_stats(m.dtype, p, numel);
      if (want_crc) m.crc32c = dump::crc32c(p, nbytes);
      if (!want_data) buf = dump::Buffer{};
      st = w_->append_event(m, std::move(buf));
    }
    check_status(st);
    py::dict out = stats_dict(*m.stats);
    if (m.crc32c) out["crc32c"] = *m.crc32c;
    return out;
  }

  void append_scalars(int64_t step, const std::string& json) { alive(); check_status(w_->append_scalars(step, json)); }
  void write_fingerprint(const std::string& json) { alive(); check_status(w_->write_fingerprint(json)); }
  void flush() {
    alive();
    Status st;
    {
      py::gil_scoped_release nogil;
      st = w_->flush();
    }
    check_status(st);
  }
  void close() {
    if (!w_) return;
    Status st;
    {
      py::gil_scoped_release nogil;
      st = w_->close();
    }
    check_status(st);
  }
  py::dict counters() const {
    alive();
    auto c = w_->counters();
    py::dict d;
    d["events"] = c.events; d["scalars"] = c.scalars; d["data_bytes"] = c.data_bytes;
    d["queued_bytes"] = c.queued_bytes; d["backpressure_waits"] = c.backpressure_waits;
    return d;
  }
  std::string part_dir() const { alive(); return w_->part_dir().string(); }

 private:
  void alive() const {
    if (!w_) throw py::value_error("dump writer is closed");
  }
  std::unique_ptr<dump::DumpWriter> w_;
};

class PyReader {
 public:
  explicit PyReader(const std::string& path) {
    Result<std::unique_ptr<dump::RunReader>> r = Status::Internal("unset");
    {
      py::gil_scoped_release nogil;
      r = dump::RunReader::open(path);
    }
    if (!r.ok()) raise_status(r.status());
    r_ = std::move(r).value();
  }

  py::list records() const {
    py::list out;
    for (const Record& r : r_->records()) {
      py::dict d;
      d["name"] = r.name.str(); d["module"] = r.module.str(); d["op"] = r.op.str(); d["direction"] = r.direction.str();
      d["role"] = r.role.str(); d["index"] = r.index; d["step"] = r.step; d["rank"] = r.rank; d["order"] = r.order;
      d["dtype"] = dtype_name(r.dtype);
      d["shape"] = py::tuple(py::cast(r.shape.vec()));
      d["stride"] = py::tuple(py::cast(r_->stride(r)));
      d["device"] = r_->device(r);
      d["stats"] = r.stats ? py::object(stats_dict(*r.stats)) : py::object(py::none());
      d["crc32c"] = r.crc32c ? py::object(py::int_(*r.crc32c)) : py::object(py::none());
      const std::string& args = r_->args_json(r);
      d["args"] = args.empty() ? py::object(py::none()) : py::object(py::str(args));
      if (auto loc = r_->data_location(r)) {
        d["file"] = loc->file.string();
        d["offset"] = loc->offset;
        d["nbytes"] = loc->nbytes;
      } else {
        d["file"] = py::none();
        d["offset"] = 0;
        d["nbytes"] = 0;
      }
      out.append(d);
    }
    return out;
  }
  std::vector<std::string> problems() const {
    std::vector<std::string> out;
    for (const Status& s : r_->problems()) out.push_back(s.message());
    return out;
  }
  py::list parts() const {
    py::list out;
    for (const auto& p : r_->parts()) {
      py::dict d;
      d["rank"] = p.rank; d["dir"] = p.dir.string(); d["manifest_bytes"] = p.manifest_bytes;
      d["manifest_valid_bytes"] = p.manifest_valid_bytes; d["torn_tail"] = p.manifest_tail;
      d["closed"] = p.closed; d["events"] = p.events; d["data_bytes"] = p.data_bytes;
      d["scalar_records"] = p.scalar_records; d["events_by_kind"] = p.events_by_kind; d["steps"] = p.steps;
      out.append(d);
    }
    return out;
  }
  py::list scalars() const {
    py::list out;
    for (const auto& s : r_->scalars()) out.append(py::make_tuple(s.rank, s.step, s.json));
    return out;
  }
  std::map<int, std::string> fingerprints() const { return r_->fingerprints(); }

 private:
  std::unique_ptr<dump::RunReader> r_;
};

}  // namespace

void bind_dump(py::module_& m) {
  py::class_<PyWriter>(m, "DumpWriter", "Background writer of one rank's part of a capture run")
      .def(py::init<const std::string&, int, bool, uint64_t, uint64_t>(), py::arg("run_dir"), py::arg("rank") = 0,
           py::arg("overwrite") = false, py::arg("queue_bytes") = 256ull << 20, py::arg("shard_bytes") = 1ull << 30)
      .def("append_event", &PyWriter::append_event, py::arg("name"), py::arg("module"), py::arg("op"),
           py::arg("direction"), py::arg("role"), py::arg("index"), py::arg("call"), py::arg("step"),
           py::arg("order"), py::arg("dtype"), py::arg("shape"), py::arg("stride"), py::arg("device"),
           py::arg("ptr"), py::arg("numel"), py::arg("stats") = py::none(), py::arg("want_crc") = false,
           py::arg("want_data") = false, py::arg("args_json") = "", py::arg("extra_json") = "",
           py::arg("crc") = py::none(), py::arg("strided") = false)
      .def("append_scalars", &PyWriter::append_scalars, py::arg("step"), py::arg("json"))
      .def("write_fingerprint", &PyWriter::write_fingerprint, py::arg("json"))
      .def("flush", &PyWriter::flush)
      .def("close", &PyWriter::close)
      .def("counters", &PyWriter::counters)
      .def_property_readonly("part_dir", &PyWriter::part_dir);

  py::class_<PyReader>(m, "RunReader", "A capture run read back (records, problems, parts, scalars)")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def("records", &PyReader::records)
      .def("problems", &PyReader::problems)
      .def("parts", &PyReader::parts)
      .def("scalars", &PyReader::scalars)
      .def("fingerprints", &PyReader::fingerprints);

  m.def("is_run_directory", [](const std::string& p) { return dump::is_run_directory(p); });
}
