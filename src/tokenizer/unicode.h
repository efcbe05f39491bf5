// UTF-8 and Unicode helpers for the tokenizer (internal). Character properties come from utf8proc;
// White_Space is the fixed list of the Unicode property (what Rust char::is_whitespace uses).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace hogwild::tok {

/// Replaces every invalid UTF-8 subsequence with U+FFFD, one per maximal subpart (Unicode §3.9
/// "U+FFFD substitution of maximal subparts", the rule of Rust from_utf8_lossy and WHATWG
/// TextDecoder). Surrogate code points (ED A0..BF ..) and overlongs are invalid.
std::string utf8_sanitize(std::string_view s);
/// True if s is valid UTF-8.
bool utf8_valid(std::string_view s);

/// Length in bytes (1..4) of the valid UTF-8 sequence starting at s[i], or 0 if invalid/truncated.
int utf8_seq_len(std::string_view s, size_t i);
/// Decodes the code point at s[i] (PRECONDITION: s is valid UTF-8); advances i past it.
char32_t utf8_next(std::string_view s, size_t& i);
/// Appends the UTF-8 encoding of cp (PRECONDITION: cp is a scalar value).
void utf8_append(std::string& out, char32_t cp);

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
