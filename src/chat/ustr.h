// UTF-8 functions with Python str semantics: Python indexes, slices and measures strings by code
// point. Invalid bytes decode to U+DC80+byte (Python's surrogateescape) and encode back to the same
// byte, so any byte string round-trips.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hogwild::chat {

std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
void utf8_append(std::string& out, char32_t cp);
/// Number of code points (Python len(str)).
size_t utf8_length(std::string_view s);
/// Python str.isspace() for one code point.
bool py_isspace(char32_t c);
/// Simple (1:1) Unicode case mappings from utf8proc.
char32_t cp_upper(char32_t c);
char32_t cp_lower(char32_t c);
bool cp_is_upper(char32_t c);
bool cp_is_lower(char32_t c);
bool cp_is_alpha(char32_t c);
bool cp_is_digit(char32_t c);
bool cp_is_printable(char32_t c);  // Python str.isprintable() for repr()
std::string str_upper(std::string_view s);
std::string str_lower(std::string_view s);

}  // namespace hogwild::chat
