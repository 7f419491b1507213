// Every registered diagnosis rule is documented in docs/diagnosis.md "Rules", and that table names no
// rule that is not registered (issue 32 §7: a registry and its documentation cannot drift apart).
#include <gtest/gtest.h>

#include "core/doc_table.h"
#include "parity/diagnosis.h"

namespace parity {
namespace {

TEST(DiagnosisDocs, EveryRegisteredRuleHasItsRowAndEveryRowIsARule) {
  std::set<std::string> codes;
  for (const Rule& r : registered_rules()) codes.insert(r.code);
  test::expect_table_matches_registry("diagnosis.md", "## Rules", codes, "rule");
}

}  // namespace
}  // namespace parity
