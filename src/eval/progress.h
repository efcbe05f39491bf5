// Progress of `hogwild eval` on stderr: problems done, accuracy so far (at the largest budget),
// tokens per second and the estimated time left. On a terminal one line is redrawn in place (at
// most 4 times a second); otherwise a plain line is printed per finished problem.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace hogwild::eval {

class Progress {
 public:
  /// total: jobs to run now (skipped ones not counted); tty: redraw in place.
  Progress(size_t total, bool tty, std::FILE* out = stderr);
  /// Tokens sampled in an engine step.
  void tokens(int64_t n);
  /// A job finished; correct: at the largest budget.
  void job_done(const std::string& id, bool correct);
  /// Ends the line (terminal) and prints the totals.
  void finish();
  /// The status text, e.g. "12/200 problems, accuracy 41.7%, 812 tok/s, ETA 14m03s".
  std::string line() const;

 private:
  void draw(bool force);
  size_t total_, done_ = 0, correct_ = 0;
  int64_t tokens_ = 0;
  bool tty_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

/// "14m03s", "2h05m", "45s".
std::string format_duration(double seconds);

}  // namespace hogwild::eval
