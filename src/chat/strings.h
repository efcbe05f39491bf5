// Python str algorithms on UTF-8 strings (code-point based where Python is): strip, split, title,
// capitalize, replace, splitlines. Used by the str methods and the filters.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hogwild::chat {

/// str.strip/lstrip/rstrip; `chars` = None strips Python whitespace.
std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left,
                     bool right);
/// str.split(sep, maxsplit) / str.rsplit with a non-empty separator.
std::vector<std::string> py_split_sep(const std::string& s, const std::string& sep,
                                      int64_t maxsplit, bool right);
/// str.split() / str.rsplit() on runs of whitespace.
std::vector<std::string> py_split_ws(const std::string& s, int64_t maxsplit, bool right);
/// str.splitlines() (keepends=False).
std::vector<std::string> py_splitlines(const std::string& s);
std::string py_title(const std::string& s);       // str.title()
std::string py_capitalize(const std::string& s);  // str.capitalize()
/// str.replace(old, new, count); stops (returning the partial result) past max_bytes.
std::string py_replace(const std::string& s, const std::string& old, const std::string& neu,
                       int64_t count, size_t max_bytes);

}  // namespace hogwild::chat
