// parity/terminal_text.h — text from other people's files, made safe to print on a terminal.
// Names (tensor, module, file, folder, log key) and the messages that quote them reach the terminal
// verbatim otherwise: an ESC byte in a tensor name could clear the screen, retitle the window or
// move the cursor, and a newline could forge a line of output ("PASSED"). Every human-readable
// output escapes such text where it is inserted; machine outputs (JSON, CSV, HTML) have their own
// escaping and do not use this.
#pragma once

#include <string>
#include <string_view>

namespace parity {

// `s` with each C0 control byte (0x00-0x1F: newline and tab too), DEL (0x7F), C1 control character
// (U+0080-U+009F, UTF-8 C2 80-C2 9F) and byte that is not part of valid UTF-8 written as the visible
// escape `\xHH` (C1: `\u00HH`); a backslash stays as it is. Valid UTF-8 text otherwise unchanged; a
// string that needs nothing is returned as is.
std::string terminal_text(std::string_view s);

}  // namespace parity
