// Model text on a terminal (the live view of `hogwild run`): made safe, measured in display
// columns and wrapped, so that no output of a model can move the cursor, recolour or clear the
// screen, overwrite a line, or make the frame wrap twice and grow past the screen.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hogwild {

/// `bytes` made safe for a terminal, as valid UTF-8 (invalid bytes → U+FFFD). Kept: '\n' and
/// '\t' (wrap_display expands tabs). Shown as visible text instead of acting on the terminal:
///   C0 controls and DEL in caret notation (ESC → "^[", '\r' → "^M", NUL → "^@", DEL → "^?"),
///   C1 controls U+0080..U+009F, line/paragraph separators U+2028/U+2029 and the bidirectional
///   embeddings, overrides and isolates U+202A..U+202E, U+2066..U+2069 as "<U+XXXX>".
std::string terminal_safe(std::string_view bytes);

/// Terminal columns of one code point (utf8proc_charwidth: 2 for East Asian wide and fullwidth
/// characters, 0 for combining marks and other zero-width characters, else 1).
int char_width(char32_t cp);

/// Columns of `s` (valid UTF-8, one line) on a terminal, tabs advancing to the next multiple of 8.
int display_width(std::string_view s);

/// Splits `s` (valid UTF-8, e.g. from terminal_safe) into lines of at most `cols` columns (cols
/// >= 1): at '\n', and before a character that would pass `cols`; a wide character is never cut
/// in two. Tabs become spaces up to the next multiple of 8 columns (within the line).
std::vector<std::string> wrap_display(std::string_view s, int cols);

/// The last characters of `s` (one line, no tabs) that fit in `cols` columns, or the first ones
/// when `keep_end` is false.
std::string fit_columns(std::string_view s, int cols, bool keep_end = false);

}  // namespace hogwild
