// UTF-8 and Unicode functions for the tokenizer (internal). Character properties come from
// utf8proc; White_Space is the fixed list of the Unicode property (what Rust char::is_whitespace
// uses).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/utf8.h"

namespace hogwild::tok {

// UTF-8 validity, U+FFFD substitution, utf8_seq_len / utf8_next / utf8_append: core/utf8.h
// (found from this namespace by ordinary lookup).

/// Unicode White_Space property (Rust char::is_whitespace).
bool is_whitespace(char32_t cp);
/// Approximates Rust char::is_alphanumeric (Alphabetic || Numeric) by general category L*, N*
/// (misses Other_Alphabetic marks; only used for added tokens with single_word=true).
bool is_alnum(char32_t cp);

/// GPT-2 `bytes_to_unicode`: byte b -> the code point that represents it in byte-level vocabs
/// (printable bytes map to themselves, the other 68 to U+0100.. in byte order).
const std::array<char32_t, 256>& byte_to_char();
/// Inverse: code point -> byte, or -1 for code points outside the 256-entry alphabet.
int char_to_byte(char32_t cp);
/// The UTF-8 string of byte_to_char()[b], precomputed.
const std::array<std::string, 256>& byte_to_utf8();

}  // namespace hogwild::tok
