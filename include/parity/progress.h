// parity/progress.h — how long-running library work reports progress without knowing about terminals.
// Library functions take a `ProgressSink*` (nullptr = silent). The CLI passes a terminal progress bar
// (src/cli/ui.h) only when stderr is a terminal and --quiet is off; pipes and CI stay quiet.
#pragma once

#include <cstdint>

namespace parity {

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  // Start a phase: `label` ("comparing"), the total amount of work and its unit ("B" for bytes,
  // "tensors"). total <= 0 means unknown.
  virtual void begin(const char* label, int64_t total, const char* unit) = 0;
  // Work done since the last call. Thread-safe: workers may call it concurrently.
  virtual void advance(int64_t amount) = 0;
  virtual void end() = 0;
};

}  // namespace parity
