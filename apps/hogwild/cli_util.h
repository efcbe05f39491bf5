// Small pieces shared by the `hogwild` subcommands: stopping on SIGINT / SIGTERM, flags that name
// files, texts read from a file or stdin, and the --seed convention of llama.cpp (-1 = random).
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/io.h"
#include "core/request_fields.h"
#include "sampling/npy.h"

namespace hogwild::cli {

/// While alive, SIGINT (Ctrl-C) and SIGTERM (what `timeout`, slurm and docker send) set flag()
/// instead of killing the process, so the command stops after its current step and still writes
/// what it produced. A second signal kills the process at once (the default action). Restores
/// the previous handlers when destroyed.
class StopSignals {
 public:
  StopSignals() {
    received_ = 0;
    struct sigaction sa {};
    sa.sa_handler = &StopSignals::handle;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  const std::atomic<bool>* flag() const { return &stop_; }
  bool stopped() const { return stop_.load(); }
  /// The shell's status for the signal received: 130 (SIGINT) or 143 (SIGTERM); 0 when none.
  int exit_code() const { return received_ ? 128 + received_ : 0; }

 private:
  static void handle(int sig) {
    if (stop_.exchange(true)) {  // the second signal: the default action (terminate)
      std::signal(sig, SIG_DFL);
      std::raise(sig);
      return;
    }
    received_ = sig;
  }
  static inline std::atomic<bool> stop_{false};
  static inline volatile std::sig_atomic_t received_ = 0;
  struct sigaction old_int_ {
  }, old_term_{};
};

/// Ends the process with `code` after flushing stdout (for the signal exit statuses, after a
/// command wrote everything it produced). Throws hogwild::Error when stdout lost data.
[[noreturn]] inline void exit_after_signal(int code) {
  check_stdout();
  std::exit(code);
}

/// CLI11 check for flags naming an output file: "" is refused with a message (an empty name was
/// silently ignored before).
inline CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& s) {
        return s.empty() ? std::string(
                               "the file name is empty; give a path (or - for standard "
                               "output)")
                         : std::string();
      },
      "FILE");
}

/// CLI11 check for flags naming a .npy file (sampling/npy.h npy_path_problem: "" and "-" refused).
inline CLI::Validator npy_path() {
  return CLI::Validator([](std::string& s) { return npy_path_problem(s); }, "FILE");
}

/// `text`, or all of stdin when text is "-".
inline std::string text_or_stdin(const std::string& text) {
  if (text != "-") return text;
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

/// The contents of the file given with -f/--file ("-" = stdin); `what` names it in messages.
inline std::string file_or_stdin(const std::string& path, const char* what) {
  if (path == "-") return text_or_stdin(path);
  return read_file(path, what);
}

/// CLI11 check of a whole-number flag against the row of `f` in the table of ranges
/// (core/request_fields.h): the message is the table's sentence ("seed is -2; it must be in ...").
inline CLI::Validator in_range(RequestField f) {
  return CLI::Validator(
      [f](std::string& s) {
        size_t used = 0;
        long long v = 0;
        try {
          v = std::stoll(s, &used);
        } catch (const std::out_of_range&) {  // a whole number beyond 64 bits
          return out_of_range_text(f, s);
        } catch (const std::exception&) {
          used = 0;
        }
        if (s.empty() || used != s.size())
          return fmt::format("'{}' is not a whole number; give {} in {}", s, field_range(f).name,
                             range_text(f));
        try {
          check_field(f, v);
        } catch (const RequestError& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "");
}

/// The parts of a comma-separated list, each with its whole number (nullopt for a part that is
/// empty or not entirely a whole number that fits in a long long): "1,x," -> {1, "1"}, {-, "x"},
/// {-, ""}. One parser for the CLI's lists (--snapshots, --budgets, generate --ids).
struct ListPart {
  std::string text;
  std::optional<long long> value;
};
inline std::vector<ListPart> parse_whole_list(const std::string& text) {
  std::vector<ListPart> parts;
  size_t i = 0;
  while (i <= text.size()) {
    const size_t j = std::min(text.find(',', i), text.size());
    ListPart p{text.substr(i, j - i), std::nullopt};
    size_t used = 0;
    try {
      const long long v = std::stoll(p.text, &used);
      if (!p.text.empty() && used == p.text.size()) p.value = v;
    } catch (const std::exception&) {
    }
    parts.push_back(std::move(p));
    i = j + 1;
  }
  return parts;
}

/// The serial steps of a comma-separated list ("256,512"), for --snapshots (run) and --budgets
/// (eval): throws hogwild::Error "FLAG: 'x' is not a whole number; ..." for a part that is no
/// number, and "FLAG: " + the table's sentence (RequestField::snapshot) for one out of its range.
inline std::vector<int64_t> parse_step_list(const std::string& text, const char* flag) {
  std::vector<int64_t> steps;
  for (const ListPart& p : parse_whole_list(text)) {
    if (!p.value)
      fail("{}: '{}' is not a whole number; give serial steps in {}, e.g. 256,512", flag, p.text,
           range_text(RequestField::snapshot));
    try {
      check_field(RequestField::snapshot, *p.value);
    } catch (const RequestError& e) {
      fail("{}: {}", flag, e.what());
    }
    steps.push_back(*p.value);
  }
  return steps;
}

/// --kv-redundancy W of `run` and `eval` (ForgetPolicy::redundancy_weight, hogwild/forgetting.h):
/// adds the option to `c`.
inline void add_kv_redundancy_flag(CLI::App* c, double& w) {
  c->add_option("--kv-redundancy", w,
                "with --kv-budget and --kv-policy evict: R-KV's redundancy weight, 1 - lambda in "
                "[0, 1]: chunks whose keys repeat other chunks' go first (score = (1 - W) * "
                "attention - W * redundancy; R-KV uses 0.9; 0 = off, attention alone)");
}

/// --seed N (a whole number >= 0) or -1 = a random seed (llama.cpp's convention): adds the option
/// to `c`; resolve_seed() gives the seed to use, which the command prints.
inline void add_seed_flag(CLI::App* c, int64_t& seed, const std::string& help) {
  c->add_option("-s,--seed", seed, help + "; -1 = random (the seed used is printed)")
      ->check(in_range(RequestField::seed));
}

inline uint64_t resolve_seed(int64_t seed) {
  if (seed >= 0) return static_cast<uint64_t>(seed);
  std::random_device rd;  // a fresh seed small enough to retype (llama.cpp prints a uint32)
  return static_cast<uint64_t>(rd());
}

}  // namespace hogwild::cli
