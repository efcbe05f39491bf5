// Reading a formatting file's JSON object by key path (formatting.cpp): every error names the
// file, the full key path and what to do. Internal to src/hogwild.
#pragma once

#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace hogwild::json_reader {

using ojson = nlohmann::ordered_json;

inline const char* type_name(const ojson& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

/// Reads one JSON object whose keys are all known; every error names origin and the key path.
class ObjReader {
 public:
  ObjReader(const ojson& obj, std::string path, std::string_view origin,
            std::vector<std::string_view> known)
      : obj_(obj), path_(std::move(path)), origin_(origin) {
    for (const auto& [key, value] : obj.items()) {
      if (key.rfind("//", 0) == 0) continue;  // comment
      if (std::find(known.begin(), known.end(), key) == known.end())
        fail(
            "{}: unknown key '{}'. The keys of {} are: {}. Fix the spelling or remove it "
            "(docs/FORMATTING.md lists every key; keys starting with \"//\" are comments).",
            origin_, full(key), path_.empty() ? "the top level" : "'" + path_ + "'",
            fmt::join(known, ", "));
    }
  }

  std::string full(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

  const ojson& get(std::string_view key) const {
    auto it = obj_.find(key);
    if (it == obj_.end())
      fail(
          "{}: missing key '{}'. Add it, or start the file with \"base\": \"<built-in name>\" "
          "(e.g. \"qwen3-math\") to inherit every key you do not set; `hogwild run --print-format` "
          "prints a complete file.",
          origin_, full(key));
    return *it;
  }

  [[noreturn]] void wrong_type(std::string_view key, std::string_view want, const ojson& v) const {
    fail("{}: key '{}' must be {}, got {}. Fix the value (see docs/FORMATTING.md).", origin_,
         full(key), want, type_name(v));
  }

  std::string str(std::string_view key) const {
    const ojson& v = get(key);
    if (!v.is_string()) wrong_type(key, "a string", v);
    return v.get<std::string>();
  }
  bool boolean(std::string_view key) const {
    const ojson& v = get(key);
    if (!v.is_boolean()) wrong_type(key, "true or false", v);
    return v.get<bool>();
  }
  /// A bool or null; returns false for null and sets `present`.
  bool optional_bool(std::string_view key, bool& present) const {
    const ojson& v = get(key);
    present = !v.is_null();
    if (!present) return false;
    if (!v.is_boolean()) wrong_type(key, "true, false or null", v);
    return v.get<bool>();
  }
  int64_t integer(std::string_view key, int64_t min) const {
    const ojson& v = get(key);
    if (!v.is_number_integer() && !v.is_number_unsigned()) wrong_type(key, "an integer", v);
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
      wrong_type(key, "a smaller integer", v);
    int64_t x = v.get<int64_t>();
    if (x < min) fail("{}: key '{}' must be >= {}, got {}.", origin_, full(key), min, x);
    return x;
  }
  std::vector<std::string> str_list(std::string_view key) const {
    const ojson& v = get(key);
    if (!v.is_array()) wrong_type(key, "an array of strings", v);
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) wrong_type(fmt::format("{}[{}]", key, i), "a string", v[i]);
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }
  ObjReader object(std::string_view key, std::vector<std::string_view> known) const {
    const ojson& v = get(key);
    if (!v.is_object()) wrong_type(key, "an object", v);
    return ObjReader(v, full(key), origin_, std::move(known));
  }

 private:
  const ojson& obj_;
  std::string path_;
  std::string origin_;
};

}  // namespace hogwild::json_reader
