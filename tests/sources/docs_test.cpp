// Every registered input format is documented in docs/formats.md "What is read", and that table names
// no format that is not registered (issue 32 §7).
#include <gtest/gtest.h>

#include "core/doc_table.h"
#include "parity/open_source.h"

namespace parity {
namespace {

TEST(FormatDocs, EveryRegisteredFormatHasItsRowAndEveryRowIsAFormat) {
  const std::set<std::string> documented = test::first_column_names(test::read_doc("formats.md"), "## What is read");
  ASSERT_FALSE(documented.empty()) << "docs/formats.md has no \"## What is read\" table";
  std::set<std::string> registered;
  for (const FormatSpec& f : registered_formats()) {
    registered.insert(f.name);
    EXPECT_TRUE(documented.count(f.name)) << f.name << " is registered but has no row in docs/formats.md \"What is read\"";
  }
  for (const std::string& name : documented)
    EXPECT_TRUE(registered.count(name)) << "docs/formats.md \"What is read\" documents " << name << ", which is not registered";
}

}  // namespace
}  // namespace parity
