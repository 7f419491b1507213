// A capture run written by parity's own dump writer, for the tests of commands under a group of
// processes: `ranks` parts (a folder each), one step, `events` module-output events per rank named like
// "layers.<e>/forward/output/0", each of n fp32 values value(rank, event, i), no statistics stored.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>

#include "parity/dump.h"

namespace parity_test {

inline void write_synthetic_run(const std::filesystem::path& dir, int ranks, int events, int n,
                                const std::function<float(int rank, int event, int i)>& value) {
  using namespace parity;
  for (int rank = 0; rank < ranks; ++rank) {
    dump::WriterOptions o;
    o.rank = rank;
    auto w = dump::DumpWriter::create(dir, o);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (int e = 0; e < events; ++e) {
      dump::EventMeta m;
      m.name = "layers." + std::to_string(e) + "/forward/output/0";
      m.module = "layers." + std::to_string(e);
      m.op = "Linear";
      m.direction = "forward";
      m.role = "output";
      m.index = 0;
      m.step = 0;
      m.order = e;
      m.shape = {n};
      dump::Buffer b = dump::Buffer::allocate(4 * static_cast<uint64_t>(n));
      for (int i = 0; i < n; ++i) {
        const float v = value(rank, e, i);
        std::memcpy(b.bytes.get() + 4 * i, &v, 4);
      }
      ASSERT_TRUE((*w)->append_event(m, std::move(b)).ok());
    }
    ASSERT_TRUE((*w)->close().ok());
  }
}

}  // namespace parity_test
