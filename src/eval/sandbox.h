// A sandbox for untrusted Python programs (LiveCodeBench candidates): one separate process per run
// in a fresh temporary directory, with
//   - rlimits as the floor, always: CPU seconds, address space, file size, open files, processes
//     (as root the child first drops to an unprivileged uid/gid of this harness process's own,
//     kSandboxUidBase + pid % 100000, since root ignores the process limit and the limit counts
//     per uid), no core files;
//   - bubblewrap (Debian package bubblewrap, `bwrap`) when it works here: new user, pid, network,
//     IPC, UTS and cgroup namespaces, read-only /usr (and the /bin, /lib symlinks), a private
//     /proc, /dev and /tmp, and the run directory as the only writable path outside the private
//     tmpfs; killed with its parent;
//   - without bubblewrap (not installed, or namespaces refused): rlimits, and as root a new
//     network namespace (no network) in the child;
//   - a wall-clock timeout and an output cap, both enforced by the harness (SIGKILL to the whole
//     process group).
// The harness never blocks on the child: stdin comes from a file, stdout/stderr are drained with
// poll(), and every exit path kills and reaps the child and removes the directory.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace hogwild::eval {

/// First uid of the sandboxes' unprivileged users (no passwd entry needed).
inline constexpr uid_t kSandboxUidBase = 200000;

struct SandboxLimits {
  double cpu_seconds = 10;              ///< RLIMIT_CPU (rounded up to whole seconds)
  double wall_seconds = 20;             ///< killed after this much real time
  int64_t memory_bytes = 1024ll << 20;  ///< RLIMIT_AS
  int64_t file_bytes = 16ll << 20;      ///< RLIMIT_FSIZE: largest file the program may write
  int64_t processes = 64;               ///< RLIMIT_NPROC (of uid 65534, system-wide)
  int64_t open_files = 64;              ///< RLIMIT_NOFILE
  int64_t output_bytes = 4ll << 20;     ///< stdout kept at most; more kills the program
  int64_t stderr_bytes = 64ll << 10;    ///< stderr kept at most (the rest is drained, dropped)
};

struct SandboxResult {
  int exit_code = -1;         ///< the program's exit status; -1 when killed by a signal
  int signal = 0;             ///< the signal that ended it (SIGKILL on timeout / output cap)
  bool timed_out = false;     ///< wall-clock timeout
  bool output_limit = false;  ///< stdout passed output_bytes
  std::string out, err;       ///< stdout (<= output_bytes), stderr (<= stderr_bytes)
  double wall_seconds = 0;
  /// "ok", "timeout", "output_limit", "signal N" (e.g. CPU limit: SIGXCPU / SIGKILL), "exit N".
  std::string status() const;
};

class Sandbox {
 public:
  /// python: the interpreter (default /usr/bin/python3, Debian's). use_bwrap: "auto" (bubblewrap
  /// when `bwrap` exists and a trial run inside it works), "yes" (throw hogwild::Error when it
  /// does not work), "no" (rlimits only).
  explicit Sandbox(SandboxLimits limits = {}, std::string python = "/usr/bin/python3",
                   const std::string& use_bwrap = "auto");

  /// Runs `python prog.py` with `code` as prog.py and `input` on stdin.
  SandboxResult run_python(const std::string& code, const std::string& input) const;

  /// "bubblewrap" or "rlimits" (what run_python uses).
  const char* isolation() const { return bwrap_.empty() ? "rlimits" : "bubblewrap"; }
  const SandboxLimits& limits() const { return limits_; }
  /// The uid the programs run as (this process's own uid when not root).
  uid_t uid() const { return uid_; }

 private:
  SandboxLimits limits_;
  std::string python_;
  std::string bwrap_;  // path of bwrap, "" = not used
  uid_t uid_ = 0;
};

}  // namespace hogwild::eval
