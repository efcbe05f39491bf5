// Text as it streams out of the server (docs/SERVER.md "Streaming"): token bytes become valid UTF-8
// without ever splitting a character, and text that may be the start of a stop string is held
// back until it is resolved.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hogwild::server {

/// Raw token bytes -> valid UTF-8, incrementally (RFC 3629: no overlong forms, no surrogates,
/// nothing above U+10FFFF). A character split across pushes is held back until complete; an
/// invalid sequence becomes one U+FFFD per maximal invalid subpart (WHATWG / Unicode §3.9).
class Utf8Decoder {
 public:
  /// Returns the text completed by `bytes` (possibly "").
  std::string push(std::string_view bytes);
  /// Returns what is held back (an incomplete character becomes U+FFFD) and resets.
  std::string flush();

 private:
  std::string pending_;
};

/// Holds back text that may be the beginning of a stop string. Input must be valid UTF-8 (a
/// Utf8Decoder's output) and stop strings non-empty valid UTF-8; then every returned piece is valid
/// UTF-8 too (a stop string starts on a character boundary).
class StopFilter {
 public:
  explicit StopFilter(std::vector<std::string> stops = {}) : stops_(std::move(stops)) {}
  /// Adds text; returns the text now known not to be part of a stop string. When a stop string
  /// completes, returns the text before it, and stopped() becomes true; later pushes return "".
  std::string push(std::string_view text);
  /// The held-back text (the generation ended without a stop string); "" after a stop.
  std::string flush();
  bool stopped() const { return stopped_; }
  /// The stop string that matched ("" before a stop).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace hogwild::server
