// DumpWriter: appends one rank's part of a capture run from a background thread.
//
// Ordering is what makes the dump crash-safe without ever rewriting a byte: for each event the tensor
// bytes are appended to the data shard first and the manifest frame that points at them second, each
// with one write() per piece. A process killed at any moment therefore leaves (a) complete frames whose
// data is complete, then (b) at most one torn frame, which the reader's checksum detects. The page
// cache keeps written bytes after SIGKILL; close() also fdatasync()s for power loss at a clean stop.
//
// Back-pressure: the queue is bounded in tensor bytes (WriterOptions::queue_bytes); a producer that
// would exceed the bound blocks until the writer catches up, unless the queue is empty (a tensor larger
// than the bound is still accepted, alone).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <mutex>
#include <thread>

#include "parity/json_number.h"
#include "dump/event_json.h"
#include "parity/dump.h"
#include "parity/json_depth.h"

#ifndef PARITY_VERSION
#define PARITY_VERSION "0.0.0"
#endif

namespace parity::dump {
namespace fs = std::filesystem;

namespace {

struct Item {
  enum class Kind { kEvent, kScalars, kFingerprint, kClose } kind;
  EventMeta meta;
  Buffer data;
  std::string text;
  int64_t step = 0;
};

Status write_all(int fd, const void* p, size_t n, const fs::path& file) {
  const auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(fmt::format("{}: write failed: {}", file.string(), std::strerror(errno)));
    }
    c += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Result<int> open_append(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(fmt::format("{}: cannot create: {}", file.string(), std::strerror(errno)));
  return fd;
}

}  // namespace

struct DumpWriter::Impl {
  WriterOptions opt;
  fs::path dir;
  int manifest_fd = -1, scalars_fd = -1, env_fd = -1, shard_fd = -1;
  int shard_index = -1;
  uint64_t shard_size = 0;

  std::mutex mu;
  std::condition_variable cv_work, cv_space, cv_done;
  std::deque<Item> queue;
  uint64_t queued_bytes = 0;
  uint64_t enqueued = 0, completed = 0;
  bool closing = false, closed = false;
  Status error;  // first write error; sticky
  WriterCounters counters;
  std::thread thread;

  ~Impl() {
    for (int fd : {manifest_fd, scalars_fd, env_fd, shard_fd})
      if (fd >= 0) ::close(fd);
  }

  static std::string shard_name(int i) { return fmt::format("data-{:06d}.bin", i); }

  Status open_shard() {
    if (shard_fd >= 0) ::close(shard_fd);
    ++shard_index;
    PARITY_ASSIGN_OR_RETURN(shard_fd, open_append(dir / shard_name(shard_index)));
    shard_size = 0;
    return Status::OK();
  }

  Status append_frame(int fd, const char* file, const nlohmann::json& j) {
    const std::string frame = encode_frame(json_text(j));
    return write_all(fd, frame.data(), frame.size(), dir / file);
  }

  Status do_event(Item& it) {
    nlohmann::json data = nullptr;
    if (it.data.size > 0) {
      const uint64_t pad = (kDataAlignment - shard_size % kDataAlignment) % kDataAlignment;
      if (shard_fd < 0 || (shard_size > 0 && shard_size + pad + it.data.size > opt.shard_bytes)) {
        PARITY_RETURN_NOT_OK(open_shard());
      }
      const uint64_t pad2 = (kDataAlignment - shard_size % kDataAlignment) % kDataAlignment;
      static const char zeros[kDataAlignment] = {};
      const fs::path shard = dir / shard_name(shard_index);
      if (pad2) PARITY_RETURN_NOT_OK(write_all(shard_fd, zeros, pad2, shard));
      const uint64_t offset = shard_size + pad2;
      PARITY_RETURN_NOT_OK(write_all(shard_fd, it.data.bytes.get(), it.data.size, shard));
      shard_size = offset + it.data.size;
      data = {{"shard", shard_name(shard_index)}, {"offset", offset}, {"nbytes", it.data.size}};
    }
    PARITY_RETURN_NOT_OK(append_frame(manifest_fd, "manifest.pfr", detail::event_to_json(it.meta, opt.rank, data)));
    std::lock_guard<std::mutex> lk(mu);
    ++counters.events;
    counters.data_bytes += it.data.size;
    return Status::OK();
  }

  Status do_item(Item& it) {
    switch (it.kind) {
      case Item::Kind::kEvent: return do_event(it);
      case Item::Kind::kScalars: {
        nlohmann::json v = json_depth_problem(it.text).empty() ? nlohmann::json::parse(it.text, nullptr, false)
                                                               : nlohmann::json(nlohmann::json::value_t::discarded);
        if (v.is_discarded()) v = it.text;
        PARITY_RETURN_NOT_OK(append_frame(scalars_fd, "scalars.pfr",
                                          {{"kind", "scalars"}, {"rank", opt.rank}, {"step", it.step}, {"values", v}}));
        std::lock_guard<std::mutex> lk(mu);
        ++counters.scalars;
        return Status::OK();
      }
      case Item::Kind::kFingerprint: {
        nlohmann::json v = json_depth_problem(it.text).empty() ? nlohmann::json::parse(it.text, nullptr, false)
                                                               : nlohmann::json(nlohmann::json::value_t::discarded);
        if (v.is_discarded()) v = it.text;
        return append_frame(env_fd, "environment.pfr", {{"kind", "fingerprint"}, {"rank", opt.rank}, {"fingerprint", v}});
      }
      case Item::Kind::kClose: {
        WriterCounters c;
        {
          std::lock_guard<std::mutex> lk(mu);
          c = counters;
        }
        PARITY_RETURN_NOT_OK(append_frame(manifest_fd, "manifest.pfr",
                                          {{"kind", "close"}, {"events", c.events}, {"data_bytes", c.data_bytes},
                                           {"scalars", c.scalars}, {"shards", shard_index + 1}}));
        for (int fd : {manifest_fd, scalars_fd, env_fd, shard_fd})
          if (fd >= 0) ::fdatasync(fd);
        return Status::OK();
      }
    }
    return Status::OK();
  }

  // Writes into a folder that was deleted (rm -rf of the run while capturing) still succeed: they go
  // to unlinked files and vanish at exit. A manifest with no links left turns that into the writer's
  // error, so the capture says so instead of losing everything after it silently. One fstat per item.
  Status check_not_removed() const {
    struct stat st {};
    if (manifest_fd >= 0 && ::fstat(manifest_fd, &st) == 0 && st.st_nlink == 0)
      return Status::IOError(fmt::format("{}: the output folder was removed while capturing; nothing written after "
                                         "that is kept", (dir / "manifest.pfr").string()));
    return Status::OK();
  }

  void run() {
    for (;;) {
      Item it;
      {
        std::unique_lock<std::mutex> lk(mu);
        cv_work.wait(lk, [&] { return !queue.empty(); });
        it = std::move(queue.front());
        queue.pop_front();
      }
      const bool is_close = it.kind == Item::Kind::kClose;
      const uint64_t nbytes = it.data.size;
      Status st = error.ok() ? do_item(it) : Status::OK();  // after an error, drain without writing
      if (st.ok() && error.ok() && !is_close) st = check_not_removed();
      it.data = Buffer{};  // free the bytes before waking producers
      {
        std::lock_guard<std::mutex> lk(mu);
        if (!st.ok() && error.ok()) error = st;
        queued_bytes -= nbytes;
        counters.queued_bytes = queued_bytes;
        ++completed;
      }
      cv_space.notify_all();
      cv_done.notify_all();
      if (is_close) return;
    }
  }

  Status enqueue(Item it) {
    std::unique_lock<std::mutex> lk(mu);
    if (closing) return Status::Invalid(fmt::format("{}: the dump writer is closed", dir.string()));
    if (!error.ok()) return error;
    const uint64_t n = it.data.size;
    if (queued_bytes > 0 && queued_bytes + n > opt.queue_bytes) {
      ++counters.backpressure_waits;
      cv_space.wait(lk, [&] { return queued_bytes == 0 || queued_bytes + n <= opt.queue_bytes || !error.ok(); });
      if (!error.ok()) return error;
    }
    queued_bytes += n;
    counters.queued_bytes = queued_bytes;
    if (it.kind == Item::Kind::kClose) closing = true;
    queue.push_back(std::move(it));
    ++enqueued;
    cv_work.notify_one();
    return Status::OK();
  }

  Status wait_done() {
    std::unique_lock<std::mutex> lk(mu);
    const uint64_t target = enqueued;
    cv_done.wait(lk, [&] { return completed >= target; });
    return error;
  }
};

DumpWriter::DumpWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DumpWriter::~DumpWriter() { (void)close(); }

Result<std::unique_ptr<DumpWriter>> DumpWriter::create(const fs::path& run_dir, const WriterOptions& options) {
  if (options.rank < 0) return Status::Invalid(fmt::format("{}: rank {} is negative", run_dir.string(), options.rank));
  if (options.queue_bytes == 0) return Status::Invalid("dump writer: queue_bytes must be positive");
  auto impl = std::make_unique<Impl>();
  impl->opt = options;
  impl->dir = run_dir / fmt::format("rank{}", options.rank);
  std::error_code ec;
  if (options.overwrite && fs::exists(impl->dir, ec)) {
    fs::remove_all(impl->dir, ec);
    if (ec) return Status::IOError(fmt::format("{}: cannot remove: {}", impl->dir.string(), ec.message()));
  }
  if (!run_dir.empty()) fs::create_directories(run_dir, ec);
  if (ec) return Status::IOError(fmt::format("{}: cannot create: {}", run_dir.string(), ec.message()));
  // The part folder is claimed with one mkdir(), which fails if it exists: of two processes that both
  // believe they are this rank (capture started before init_process_group), exactly one gets the part
  // and the other is refused here, instead of both appending to one shard (a check-then-create races).
  if (::mkdir(impl->dir.c_str(), 0755) != 0) {
    const int e = errno;
    if (e == EEXIST)
      return Status::Invalid(fmt::format("{}: already exists; capture never overwrites a run (another process may "
                                         "be writing this rank: choose another directory, give each process its "
                                         "own rank, or pass overwrite=True)", impl->dir.string()));
    return Status::IOError(fmt::format("{}: cannot create: {}", impl->dir.string(), std::strerror(e)));
  }
  PARITY_ASSIGN_OR_RETURN(impl->manifest_fd, open_append(impl->dir / "manifest.pfr"));
  PARITY_ASSIGN_OR_RETURN(impl->scalars_fd, open_append(impl->dir / "scalars.pfr"));
  PARITY_ASSIGN_OR_RETURN(impl->env_fd, open_append(impl->dir / "environment.pfr"));
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  PARITY_RETURN_NOT_OK(impl->append_frame(impl->manifest_fd, "manifest.pfr",
                                          {{"kind", "header"}, {"schema", schemas::kDump.id}, {"rank", options.rank},
                                           {"alignment", kDataAlignment}, {"created_unix_ms", now},
                                           {"writer", std::string("parity ") + PARITY_VERSION}}));
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<DumpWriter>(new DumpWriter(std::move(impl)));
}

Status DumpWriter::write_fingerprint(const std::string& json_object_text) {
  Item it{Item::Kind::kFingerprint, {}, {}, json_object_text, 0};
  return impl_->enqueue(std::move(it));
}

Status DumpWriter::append_event(EventMeta meta, Buffer data) {
  Item it{Item::Kind::kEvent, std::move(meta), std::move(data), {}, 0};
  return impl_->enqueue(std::move(it));
}

Status DumpWriter::append_scalars(int64_t step, const std::string& json_object_text) {
  Item it{Item::Kind::kScalars, {}, {}, json_object_text, step};
  return impl_->enqueue(std::move(it));
}

Status DumpWriter::flush() { return impl_->wait_done(); }

Status DumpWriter::close() {
  if (!impl_) return Status::OK();
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    if (impl_->closed) return impl_->error;
  }
  {
    std::unique_lock<std::mutex> lk(impl_->mu);
    if (!impl_->closing) {
      impl_->closing = true;
      impl_->queue.push_back(Item{Item::Kind::kClose, {}, {}, {}, 0});
      ++impl_->enqueued;
      impl_->cv_work.notify_one();
    }
  }
  if (impl_->thread.joinable()) impl_->thread.join();
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->closed = true;
  return impl_->error;
}

WriterCounters DumpWriter::counters() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->counters;
}

const fs::path& DumpWriter::part_dir() const { return impl_->dir; }

}  // namespace parity::dump
