// tests/formats/record_site_test.cpp — where a record sits in the model (parity/record_site.h), read from
// its name once: what rows[].site publishes, the report's tree and the layout merge read.
#include <gtest/gtest.h>

#include <string>

#include "parity/record_site.h"

namespace parity {
namespace {

// A record's place in the model (event_site): what rows[].site publishes and the report's tree reads.
TEST(RecordSite, FollowsTheCaptureNames) {
  auto site = [](const char* name, const char* module) {
    Record r;
    r.name = name;
    r.module = module;
    const EventSite s = event_site(r);
    return s.module + "|" + std::to_string(s.call) + "|" + s.op;
  };
  EXPECT_EQ(site("layers.0.attn/forward/output/0", "layers.0.attn"), "layers.0.attn|0|");
  EXPECT_EQ(site("shared#2/forward/output/0", "shared"), "shared|2|");
  EXPECT_EQ(site("layers.2.attn#1/softmax#0/forward/output/0", "layers.2.attn"), "layers.2.attn|1|softmax#0");
  EXPECT_EQ(site("<global>/all_reduce#3/forward/input/0", "<global>"), "<global>|0|all_reduce#3");
  EXPECT_EQ(site("m.wq/backward/grad/weight#1", "m.wq"), "m.wq|0|");
  EXPECT_EQ(site("m.wq/optimizer/exp_avg/weight", "m.wq"), "m.wq|0|");
  // The module part of the name where the source sets no module.
  EXPECT_EQ(site("blocks.1#1/gelu#0/forward/output/0", ""), "blocks.1|1|gelu#0");
  // Plain tensors sit at their name, without the file extension, separators read as dots.
  EXPECT_EQ(site("blocks.2.mlp.out.npy", ""), "blocks.2.mlp.out|0|");
  EXPECT_EQ(site("ckpt.npz:layer.w", ""), "ckpt.layer.w|0|");
  EXPECT_EQ(site("sub/dir/x.pt", ""), "sub.dir.x|0|");
  EXPECT_EQ(site("model.bin.weights", ""), "model.bin.weights|0|");  // ".bin" not at an end: kept
  // Names of other tools keep the module their reader sets (msprobe's module path).
  EXPECT_EQ(site("Functional.softmax.0.forward.input.0", "layers.0.attn"), "layers.0.attn|0|");
}

}  // namespace
}  // namespace parity
