// Stop strings on streamed text, the one implementation of `hogwild generate --stop` and the
// server's `stop` (docs/SERVER.md "Streaming"): the output is cut before the earliest stop string,
// as vLLM / the OpenAI API return it (include_stop_str_in_output false), and text that could still
// become the start of one is held back until it is resolved, so a stream never shows part of it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hogwild {

/// Finds stop strings in text that arrives piece by piece and releases the text that is known not
/// to belong to one. Matching is on bytes. When the input is valid UTF-8 (a decoder's output) and
/// the stop strings are valid UTF-8, every released piece is valid UTF-8 too: a held-back tail is
/// a prefix of a stop string, so it starts on a character boundary.
class StopStrings {
 public:
  /// Throws RequestError (core/request_fields.h `check_stop_string`) unless every stop string
  /// has 1..256 bytes: an empty one would stop at once. No stop strings: every push releases all
  /// of its text.
  explicit StopStrings(std::vector<std::string> stops = {});

  /// Adds text; returns the text now known not to be part of a stop string (possibly ""). When a
  /// stop string completes, returns the text before the earliest one (by start; the first listed
  /// of those starting there), and stopped() becomes true; later pushes return "".
  std::string push(std::string_view text);
  /// The held-back tail (the text ended without a stop string); "" after a stop. Resets the tail.
  std::string flush();
  bool stopped() const { return stopped_; }
  /// The stop string that matched ("" before a stop).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;  // released nowhere yet: the longest tail that is a proper prefix of a stop
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace hogwild
