// UPDATE_LOST_TO_ROUNDING (src/diagnosis/rules/update_lost_to_rounding.cpp): a parameter whose update
// differs because most of the golden's step rounds to nothing in the target's dtype is named, with its
// element counts; a parameter that stood still for another reason (its steps would have fit the dtype) is
// not, and the failing run then says NO_CAUSE_FOUND.
#include <gtest/gtest.h>

#include "analysis/synth.h"
#include "parity/diagnosis.h"

namespace parity {
namespace {

using test::Synth;

const Diagnosis* find(const Findings& f, const std::string& code) {
  for (const Diagnosis& d : f.diagnoses)
    if (d.code == code) return &d;
  return nullptr;
}

// A LayerNorm weight compared at step 1 whose update since step 0 differs by its whole size (the target
// did not move): `lost` of its 64 moved elements rounded to nothing in bf16.
Findings stalled_weight(int64_t lost) {
  Synth s;
  ParameterUpdate u;
  u.rel_error = 1;
  u.golden_norm = 8e-3;
  u.moved = 64;
  u.stalled = 64;
  u.lost = lost;
  s.stalled_norm_weight(u);
  s.result.summary = summarize_compare(s.result);
  return analyse_and_diagnose(s.result, nullptr, nullptr);
}

TEST(UpdateLostToRounding, NamesTheParameterWhoseStepRoundsToNothing) {
  const Findings f = stalled_weight(64);
  const Diagnosis* d = find(f, "UPDATE_LOST_TO_ROUNDING");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kWarn);
  ASSERT_EQ(d->events.size(), 1u);
  EXPECT_EQ(d->events[0], "norm/forward/parameter/weight");
  std::string text;
  for (const std::string& e : d->evidence) text += e + "\n";
  EXPECT_NE(text.find("1 parameters did not take the optimizer's step in the target: 64 of 64 moved elements lost"),
            std::string::npos) << text;
  EXPECT_NE(text.find("norm/forward/parameter/weight (bf16, step 0 → 1): 64 of the 64 elements"), std::string::npos)
      << text;
  EXPECT_NE(d->advice.find("fp32 master copy"), std::string::npos);
  EXPECT_EQ(find(f, "NO_CAUSE_FOUND"), nullptr);  // a cause is named
}

TEST(UpdateLostToRounding, AStallTheDtypeDoesNotExplainIsNotNamed) {
  const Findings f = stalled_weight(10);  // 54 of the 64 steps would have fit in bf16: a frozen weight, lr 0 …
  EXPECT_EQ(find(f, "UPDATE_LOST_TO_ROUNDING"), nullptr);
  EXPECT_NE(find(f, "NO_CAUSE_FOUND"), nullptr);
}

}  // namespace
}  // namespace parity
