// terminal_text(): control characters and broken UTF-8 become visible escapes; text stays text.
#include <gtest/gtest.h>

#include "parity/terminal_text.h"

namespace parity {
namespace {

TEST(TerminalText, PlainAndUtf8TextIsUnchanged) {
  EXPECT_EQ(terminal_text("model.layers.0.self_attn.q_proj/forward/output/0"),
            "model.layers.0.self_attn.q_proj/forward/output/0");
  EXPECT_EQ(terminal_text("注意力 → ▁▂█ naïve \\ back"), "注意力 → ▁▂█ naïve \\ back");
  EXPECT_EQ(terminal_text(""), "");
}

TEST(TerminalText, C0ControlsDelAndNewlinesAreEscaped) {
  EXPECT_EQ(terminal_text("a\x1b]0;pwned\x07z"), "a\\x1b]0;pwned\\x07z");
  EXPECT_EQ(terminal_text("x\nPASSED"), "x\\x0aPASSED");
  EXPECT_EQ(terminal_text(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(terminal_text("tab\there\r\x7f"), "tab\\x09here\\x0d\\x7f");
}

TEST(TerminalText, C1ControlsAreEscapedAsCodePoints) {
  EXPECT_EQ(terminal_text("c1\xc2\x9b" "31m"), "c1\\u009b31m");     // U+009B CSI
  EXPECT_EQ(terminal_text("nel\xc2\x85."), "nel\\u0085.");
  EXPECT_EQ(terminal_text("nbsp\xc2\xa0."), "nbsp\xc2\xa0.");      // U+00A0 is text, not a control
}

TEST(TerminalText, BytesThatAreNotUtf8AreEscaped) {
  EXPECT_EQ(terminal_text("raw\x9b" "31m"), "raw\\x9b31m");          // a lone 8-bit CSI byte
  EXPECT_EQ(terminal_text("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(terminal_text("cut\xe2\x96"), "cut\\xe2\\x96");           // truncated sequence at the end
  EXPECT_EQ(terminal_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");      // a UTF-16 surrogate, not UTF-8
  EXPECT_EQ(terminal_text("\xc0\xaf"), "\\xc0\\xaf");                // overlong '/'
}

}  // namespace
}  // namespace parity
