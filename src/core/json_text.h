// JSON text that is always written: every string valid UTF-8 (core/utf8.h). Model output and user
// input are raw bytes; nlohmann::json refuses to dump a string that is not UTF-8 (type_error 316),
// which would lose a finished run's transcript. Every JSON writer of the project dumps through
// dump_json and puts raw bytes in with set_text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/utf8.h"

namespace hogwild {

/// j as JSON text (indent < 0: one line), with any string that is still not valid UTF-8 written
/// with U+FFFD substitutions instead of throwing. Never throws for string contents.
template <typename Json>
std::string dump_json(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

/// Sets j[key] to utf8_lossy(bytes); when bytes are not valid UTF-8 also sets j[key + "_bytes"]
/// to the raw bytes as an array of integers 0..255, so that nothing is lost.
template <typename Json>
void set_text(Json& j, const std::string& key, std::string_view bytes) {
  j[key] = utf8_lossy(bytes);
  if (!utf8_valid(bytes)) {
    Json raw = Json::array();
    for (char c : bytes) raw.push_back(static_cast<int>(static_cast<unsigned char>(c)));
    j[key + "_bytes"] = std::move(raw);
  }
}

}  // namespace hogwild
