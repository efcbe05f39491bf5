// Terminal view of a running session (`hogwild run`), in one of two modes:
//   redraw  (stdout is a terminal, TERM is not "dumb", no --no-live): the screen is redrawn at most
//           every 100 ms: a status line (elapsed time, tok/s, serial step N / budget, snapshots,
//           answer state), the newest finished steps of the shared history, and each worker's
//           current step under its name in its own colour (none with NO_COLOR). The frame always
//           fits the terminal (rows and columns, wide characters and tabs counted).
//   lines   one plain line per finished step as it ends; when stdout is not a terminal, a status
//           line on stderr every 10 s (in place every 0.5 s when stderr is a terminal).
// Model text never reaches the terminal raw: control characters are shown as visible escapes
// (term_text.h terminal_safe). finish() prints the final state, the answer, the effective settings
// and the statistics in both modes.
#pragma once

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "hogwild/session.h"

namespace hogwild {

struct LiveViewOptions {
  bool redraw = false;          // redraw mode (else lines)
  bool colour = false;          // ANSI colours (redraw mode only)
  std::FILE* status = nullptr;  // lines mode: where the periodic status line goes (null = none)
  bool status_in_place = false;     // status is a terminal: one line updated with '\r'
  double status_every_seconds = 10;  // 0: after every serial step
  int64_t budget = 0;                // serial steps (0 = until an answer), for the status line
  int n_snapshots = 0;
  std::vector<std::string> settings;  // summary lines ("sampling: greedy", "stop ids: ...")
  std::vector<std::string> warnings;  // printed as "warning: ..." in the summary
};

/// Picks the mode from the environment: redraw when `out_is_tty`, TERM is not "dumb" and not
/// `no_live`; colour in redraw mode unless NO_COLOR is set (to anything non-empty, no-color.org);
/// the status line on `err` when out is not a terminal (in place when err is one and TERM is not
/// "dumb"). term / no_color: the values of the environment variables (null when unset).
LiveViewOptions live_view_mode(bool out_is_tty, bool err_is_tty, const char* term,
                               const char* no_color, bool no_live, std::FILE* err);

/// What a redraw shows (render_frame's input).
struct FrameState {
  std::string status;                                 // the status line
  std::vector<std::string> names;                     // (n_workers)
  std::vector<std::string> current;                   // (n_workers) current step bytes
  std::vector<std::pair<int, std::string>> history;   // finished steps (worker, bytes), oldest first
};

/// The redraw frame: at most rows - 1 lines (the last row stays free so the terminal never
/// scrolls), each at most `cols` columns wide (colour codes not counted). With room: the status
/// line, a history header and the newest history lines, then per worker a name line and the end
/// of its current step; with little room one line per worker; then as many lines as fit.
std::vector<std::string> render_frame(const FrameState& s, int rows, int cols, bool colour);

class LiveView : public SessionObserver {
 public:
  /// out: where the view prints; names: worker names (n_workers).
  LiveView(std::FILE* out, std::vector<std::string> names, LiveViewOptions opt);
  void on_forward(const ForwardRecord& r) override;
  void on_step_start(int w, int k, const std::string& b, bool c) override;
  void on_token(const TokenEvent& e) override;
  void on_step_end(int w, int k, const std::string& t,
                   const std::optional<std::string>& a) override;
  void on_snapshot(const FinisherResult& f) override;
  /// Prints the last state, the answer, the settings, warnings and the stats (serial steps, tokens
  /// per worker, tok/s, time).
  void finish(const SessionResult& r, const std::string& title);
  /// The status line as shown now, e.g. "serial step 12 / 100 | 3.1 s | 7.7 tok/s | 24 tokens |
  /// answer: none yet".
  std::string status_line() const;

 private:
  void redraw(bool force);
  void status(bool force);

  std::FILE* out_;
  std::vector<std::string> names_;
  LiveViewOptions opt_;
  std::vector<std::string> current_;                  // each worker's current step text
  std::vector<std::pair<int, std::string>> history_;  // finished steps (worker, text)
  int64_t serial_ = 0, tokens_ = 0;
  int snapshots_done_ = 0;
  std::optional<std::string> answer_;
  std::chrono::steady_clock::time_point start_, last_draw_{}, last_status_{};
};

}  // namespace hogwild
