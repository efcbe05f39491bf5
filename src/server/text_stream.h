// Text as it streams out of the server (docs/SERVER.md "Streaming"): token bytes become valid UTF-8
// without ever splitting a character. Stop strings are held back by sampling/stop_strings.h.
#pragma once

#include <string>
#include <string_view>

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

}  // namespace hogwild::server
