// Every registered input format is documented in docs/formats.md "What is read", and that table names
// no format that is not registered (issue 32 §7).
#include <gtest/gtest.h>

#include "core/doc_table.h"
#include "parity/open_source.h"

namespace parity {
namespace {

TEST(FormatDocs, EveryRegisteredFormatHasItsRowAndEveryRowIsAFormat) {
  std::set<std::string> names;
  for (const FormatSpec& f : registered_formats()) names.insert(f.name);
  test::expect_table_matches_registry("formats.md", "## What is read", names, "format");
}

}  // namespace
}  // namespace parity
