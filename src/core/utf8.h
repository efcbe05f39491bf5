// UTF-8 validity for every text the project writes (JSON, terminals, files). One implementation,
// used by the tokenizer (encode's input, decode's output) and by every JSON writer: JSON strings
// must be valid UTF-8, and model output is raw bytes that may end mid-character or hold byte
// sequences that are not UTF-8 at all (random weights, byte-level tokens).
//
// Validity is that of Unicode §3.9 Table 3-7 (RFC 3629): no overlong forms, no surrogate code
// points (ED A0..BF ..), nothing above U+10FFFF.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hogwild {

/// True if s is valid UTF-8.
bool utf8_valid(std::string_view s);

/// s with every invalid subsequence replaced by U+FFFD, one per maximal subpart (Unicode §3.9
/// "U+FFFD substitution of maximal subparts": the rule of Rust String::from_utf8_lossy and of the
/// WHATWG TextDecoder). Valid input is returned unchanged.
std::string utf8_lossy(std::string_view s);

/// Length of the longest prefix of s that does not end inside a character that later bytes could
/// still complete: s minus a trailing incomplete (but so far valid) sequence of 1..3 bytes. For
/// streams: show utf8_lossy(s.substr(0, utf8_complete_prefix(s))) and hold the rest back.
size_t utf8_complete_prefix(std::string_view s);

/// Length in bytes (1..4) of the valid UTF-8 sequence starting at s[i], or 0 if it is invalid or
/// truncated. PRECONDITION: i < s.size().
int utf8_seq_len(std::string_view s, size_t i);

/// Decodes the code point at s[i] and advances i past it. PRECONDITION: s is valid UTF-8 at i.
char32_t utf8_next(std::string_view s, size_t& i);

/// Appends the UTF-8 encoding of cp. PRECONDITION: cp is a Unicode scalar value.
void utf8_append(std::string& out, char32_t cp);

}  // namespace hogwild
