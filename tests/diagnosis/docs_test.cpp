// Every registered diagnosis rule is documented in docs/diagnosis.md "Rules", and that table names no
// rule that is not registered (issue 32 §7: a registry and its documentation cannot drift apart).
#include <gtest/gtest.h>

#include "core/doc_table.h"
#include "parity/diagnosis.h"

namespace parity {
namespace {

TEST(DiagnosisDocs, EveryRegisteredRuleHasItsRowAndEveryRowIsARule) {
  const std::set<std::string> documented = test::first_column_names(test::read_doc("diagnosis.md"), "## Rules");
  ASSERT_FALSE(documented.empty()) << "docs/diagnosis.md has no \"## Rules\" table";
  std::set<std::string> registered;
  for (const Rule& r : registered_rules()) {
    registered.insert(r.code);
    EXPECT_TRUE(documented.count(r.code)) << r.code << " is registered but has no row in docs/diagnosis.md \"Rules\"";
  }
  for (const std::string& code : documented)
    EXPECT_TRUE(registered.count(code)) << "docs/diagnosis.md \"Rules\" documents " << code << ", which is not registered";
}

}  // namespace
}  // namespace parity
