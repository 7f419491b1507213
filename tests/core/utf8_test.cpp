// tests/core/utf8_test.cpp — well_formed_utf8 and CSV cells: well-formed text unchanged, each stray byte one U+FFFD
// (parity/utf8.h), the cases of Unicode's table 3-7 that a file name in Latin-1 or a cut name hits.
#include <gtest/gtest.h>

#include "parity/csv_cell.h"
#include "parity/utf8.h"

using parity::utf8_sequence_length;
using parity::well_formed_utf8;

namespace {
const std::string kReplacement = "\xEF\xBF\xBD";
}

TEST(Utf8, WellFormedTextIsUnchanged) {
  for (const std::string s : {"", "layers.0.attn", "caf\xC3\xA9", "\xE4\xB8\xAD\xE6\x96\x87", "\xF0\x9F\x98\x80 x"})
    EXPECT_EQ(well_formed_utf8(s), s);
}

TEST(Utf8, EachStrayByteIsOneReplacementCharacter) {
  EXPECT_EQ(well_formed_utf8("caf\xE9.npy"), "caf" + kReplacement + ".npy");             // Latin-1 é
  EXPECT_EQ(well_formed_utf8("ab\xE4\xB8"), "ab" + kReplacement + kReplacement);        // cut 3-byte sequence
  EXPECT_EQ(well_formed_utf8("\xC0\xAF"), kReplacement + kReplacement);                 // overlong '/'
  EXPECT_EQ(well_formed_utf8("\xED\xA0\x80"), kReplacement + kReplacement + kReplacement);  // a UTF-16 surrogate
  EXPECT_EQ(well_formed_utf8("\xF4\x90\x80\x80"),
            kReplacement + kReplacement + kReplacement + kReplacement);  // above U+10FFFF
}

TEST(Utf8, SequenceLengths) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8_sequence_length("\xC3\xA9", 0), 2u);
  EXPECT_EQ(utf8_sequence_length("\xC3", 0), 0u);
  EXPECT_EQ(utf8_sequence_length("\xF0\x9F\x98\x80", 0), 4u);
  EXPECT_EQ(utf8_sequence_length("\x80", 0), 0u);
}

TEST(Utf8, CsvCellsAreWellFormed) {
  EXPECT_EQ(parity::csv_escape("caf\xE9"), "caf" + kReplacement);
  EXPECT_EQ(parity::csv_escape("caf\xE9,x"), "\"caf" + kReplacement + ",x\"");
}

// Issue 33 §4: names starting with '=', '+', '-', '@' (or a tab / CR) were written verbatim and a
// spreadsheet evaluated them; a NUL became a raw NUL byte. OWASP's advice: a leading single quote, quoted.
TEST(Utf8, CsvCellsThatAreFormulasAreNeutralised) {
  EXPECT_EQ(parity::csv_escape("=HYPERLINK(\"http://x\",\"y\")"), "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"");
  EXPECT_EQ(parity::csv_escape("+1"), "\"'+1\"");
  EXPECT_EQ(parity::csv_escape("-lr"), "\"'-lr\"");
  EXPECT_EQ(parity::csv_escape("@SUM(A1)"), "\"'@SUM(A1)\"");
  EXPECT_EQ(parity::csv_escape("\tx"), "\"'\tx\"");
  EXPECT_EQ(parity::csv_escape("a=b"), "a=b");  // only the first character makes a formula
  EXPECT_EQ(parity::csv_number(-0.5), "-0.5");  // numbers are not text: they stay numbers
  EXPECT_EQ(parity::csv_escape(std::string("a\0b", 3)), "a" + kReplacement + "b");
  EXPECT_EQ(parity::csv_escape(std::string("=\0", 2)), "\"'=" + kReplacement + "\"");
}
