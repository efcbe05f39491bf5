// Terminal view of a running session (`hogwild run`). On a terminal: the screen is redrawn at most
// every 100 ms with the shared history (finished steps, newest last) and each worker's current
// step under its name in its own ANSI colour. Otherwise: one plain line per finished step as it
// ends. finish() prints the final state, the answer and the statistics in both modes.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "hogwild/session.h"

namespace hogwild {

class LiveView : public SessionObserver {
 public:
  /// out: where to print; tty: redraw mode (else plain lines); names: worker names (n_workers).
  LiveView(std::FILE* out, bool tty, std::vector<std::string> names);
  void on_forward(const ForwardRecord& r) override;
  void on_step_start(int w, int k, const std::string& b, bool c) override;
  void on_token(const TokenEvent& e) override;
  void on_step_end(int w, int k, const std::string& t,
                   const std::optional<std::string>& a) override;
  void on_snapshot(const FinisherResult& f) override;
  /// Prints the last state, the answer and the stats (serial steps, tokens per worker, tok/s,
  /// time).
  void finish(const SessionResult& r, const std::string& title);

 private:
  void redraw(bool force);
  std::string colour(int w) const;

  std::FILE* out_;
  bool tty_;
  std::vector<std::string> names_;
  std::vector<std::string> current_;                  // each worker's current step text
  std::vector<std::pair<int, std::string>> history_;  // finished steps (worker, text)
  int64_t serial_ = 0, tokens_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace hogwild
