// Stop strings on streamed text (`hogwild generate --stop`): the output is cut before the
// earliest stop string, as vLLM / the OpenAI API return it, and a stream holds back a tail that
// could still become one.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace hogwild {

/// Finds stop strings in streamed text. Feed each newly decoded piece; after a match, text() is
/// the output up to (not including) the earliest stop string, as vLLM / the OpenAI API return it.
class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  /// Appends text; returns true when some stop string is now complete.
  bool push(const std::string& piece);
  bool stopped() const { return stopped_; }
  /// All text so far, cut before the first stop string once one matched.
  const std::string& text() const { return text_; }
  /// Text that can be shown now: text() minus a tail that could still be the start of a stop
  /// string (so a stream never shows part of a stop string). Everything once stopped.
  size_t safe_length() const;

 private:
  std::vector<std::string> stops_;
  std::string text_;
  bool stopped_ = false;
};

}  // namespace hogwild
