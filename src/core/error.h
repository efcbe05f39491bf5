// Error channels (docs/STYLE.md habit 6).
// - hogwild::Error: user-facing failures (bad path, corrupt file, unsupported architecture, bad
// request).
//   The message names the problem and says what to do. The CLI prints it and exits non-zero; the
//   HTTP server answers 4xx JSON.
// - HOGWILD_CHECK: broken internal invariant (a bug, not bad input): aborts with file:line.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace hogwild {

/// A user-facing error. what() is a complete sentence with a hint for the fix.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

/// Throws hogwild::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace hogwild

/// Internal invariant; on failure prints file:line and the expression and aborts.
#define HOGWILD_CHECK(cond)                                                                  \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "%s:%d: internal check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)
