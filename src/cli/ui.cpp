#include "cli/ui.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "parity/terminal_text.h"

namespace parity::cli {

bool use_color(const GlobalOptions& global, int fd) {
  if (global.color == "always") return true;
  if (global.color == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  // Under mpirun the process writes to a pseudo-terminal of mpirun's even when mpirun's own output is a
  // file: whether a person reads it is unknown there, so no colour unless asked (--color always).
  if (global.group != nullptr) return false;
  return isatty(fd) != 0;
}

int terminal_width() {
  // COLUMNS (set by shells, or by the user for a pipe) wins; then the terminal's own width.
  if (const char* env = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 40 && n <= 10000) return static_cast<int>(n);
  }
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) {
    return ws.ws_col;
  }
  return 100;
}

std::string style(const std::string& text, const char* sgr, bool color) {
  if (!color) return text;
  return std::string("\033[") + sgr + "m" + text + "\033[0m";
}

std::string colorize_verdict(const std::string& text, Verdict v, bool color) {
  switch (v) {
    case Verdict::kPass: return style(text, "32", color);    // green
    case Verdict::kWarn: return style(text, "33", color);    // yellow
    case Verdict::kFail: return style(text, "1;31", color);  // bold red
    case Verdict::kError: return style(text, "35", color);   // magenta
  }
  return text;
}

namespace {

// "12.3 MB" style amounts for byte units; plain counts otherwise.
std::string human_amount(double v, const std::string& unit) {
  char buf[48];
  if (unit == "B") {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (v >= 1024.0 && i < 4) { v /= 1024.0; ++i; }
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[i]);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, unit.c_str());
  }
  return buf;
}

// A single-line bar redrawn at most 10 times a second:
//   comparing  [#########.........]  48%  512.0 MiB/1.0 GiB  3.1 GiB/s  ETA 0:00:01
class TerminalProgress final : public ProgressSink {
 public:
  void begin(const char* label, int64_t total, const char* unit) override {
    std::lock_guard<std::mutex> lock(mu_);
    label_ = label;
    unit_ = unit;
    total_ = total;
    done_ = 0;
    start_ = Clock::now();
    last_draw_ = start_ - std::chrono::seconds(1);
    active_ = true;
  }
  void advance(int64_t amount) override {
    done_.fetch_add(amount, std::memory_order_relaxed);
    auto now = Clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock() || !active_) return;
    last_draw_ = now;
    draw(now, false);
  }
  void end() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!active_) return;
    draw(Clock::now(), true);
    std::fputs("\n", stderr);
    active_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;
  void draw(Clock::time_point now, bool final) {
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double done = static_cast<double>(done_.load(std::memory_order_relaxed));
    const double rate = secs > 0 ? done / secs : 0.0;
    std::string line = "\r" + label_ + "  ";
    if (total_ > 0) {
      const double frac = std::min(1.0, done / static_cast<double>(total_));
      const int width = 24;
      const int filled = static_cast<int>(frac * width);
      line += "[" + std::string(filled, '#') + std::string(width - filled, '.') + "] ";
      char pct[16];
      std::snprintf(pct, sizeof pct, "%3.0f%%  ", frac * 100.0);
      line += pct;
      line += human_amount(done, unit_) + "/" + human_amount(static_cast<double>(total_), unit_);
    } else {
      line += human_amount(done, unit_);
    }
    line += "  " + human_amount(rate, unit_) + "/s";
    if (total_ > 0 && rate > 0 && !final) {
      const int eta = static_cast<int>((static_cast<double>(total_) - done) / rate);
      char buf[32];
      std::snprintf(buf, sizeof buf, "  ETA %d:%02d:%02d", eta / 3600, eta / 60 % 60, eta % 60);
      line += buf;
    }
    line += "\033[K";  // clear the rest of the line
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  }

  std::mutex mu_;
  std::string label_, unit_;
  int64_t total_ = 0;
  std::atomic<int64_t> done_{0};
  Clock::time_point start_, last_draw_;
  bool active_ = false;
};

}  // namespace

std::unique_ptr<ProgressSink> make_progress(const GlobalOptions& global) {
  if (global.quiet || isatty(STDERR_FILENO) == 0 || !is_output_process(global.group)) return nullptr;
  return std::make_unique<TerminalProgress>();
}

bool opened_everywhere(const GlobalOptions& global, const Status& here, const char* command) {
  if (!is_distributed(global.group)) return here.ok();
  const bool at_zero = global.group->broadcast(here.ok() ? 1 : 0) != 0;
  if (at_zero && !here.ok())
    global.group->abort(std::string("parity ") + command + ": process " + std::to_string(global.group->rank()) +
                            " of " + std::to_string(global.group->size()) + ": " + terminal_text(here.message()),
                        kExitUsage);
  return at_zero;
}

}  // namespace parity::cli
