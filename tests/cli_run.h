// Runs the built `hogwild` binary for the CLI tests (HOGWILD_BINARY_DIR is defined by
// tests/CMakeLists.txt): its exit code and what it printed.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace hogwild::test {

struct CliResult {
  int code;         // exit status; -1 when it could not be started or did not exit normally
  std::string out;  // what it wrote to the streams `streams` sends to stdout
};

/// Runs `hogwild ARGS` through the shell; `streams` is the redirection (the default merges stderr
/// into stdout for messages; "2>/dev/null" keeps stdout alone, e.g. for JSON).
inline CliResult run_hogwild(const std::string& args, const std::string& streams = "2>&1") {
  const std::string cmd = std::string(HOGWILD_BINARY_DIR) + "/hogwild " + args + " " + streams;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  CliResult r{-1, ""};
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace hogwild::test
