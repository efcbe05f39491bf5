// LiveView: redraw and lines modes, the status line, the summary (live_view.h).
#include "hogwild/live_view.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/utf8.h"
#include "hogwild/term_text.h"

namespace hogwild {

namespace {

constexpr const char* kReset = "\x1b[0m";
constexpr const char* kDim = "\x1b[2m";
constexpr const char* kBold = "\x1b[1m";

// A worker's colour; none (bold) for a person's note (w < 0).
std::string worker_colour(int w) {
  static const int kColours[] = {36, 33, 35, 32, 34, 31, 96, 93};  // cyan yellow magenta ...
  return w < 0 ? std::string(kBold) : fmt::format("\x1b[{}m", kColours[w % 8]);
}

// Terminal-safe text of a stream, without a trailing character still being written.
std::string shown(const std::string& bytes) {
  return terminal_safe(std::string_view(bytes).substr(0, utf8_complete_prefix(bytes)));
}

// The terminal's size from the view's output (24 x 80 when it is not a terminal).
void terminal_size(std::FILE* out, int& rows, int& cols) {
  winsize ws{};
  rows = 24;
  cols = 80;
  if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
    rows = ws.ws_row;
    cols = ws.ws_col;
  }
}

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

LiveViewOptions live_view_mode(bool out_is_tty, bool err_is_tty, const char* term,
                               const char* no_color, bool no_live, std::FILE* err) {
  LiveViewOptions o;
  const bool dumb = term && std::strcmp(term, "dumb") == 0;
  o.redraw = out_is_tty && !dumb && !no_live;
  o.colour = o.redraw && !(no_color && *no_color);
  if (!out_is_tty) {
    o.status = err;
    o.status_in_place = err_is_tty && !dumb;
    o.status_every_seconds = o.status_in_place ? 0.5 : 10;
  }
  return o;
}

std::vector<std::string> render_frame(const FrameState& s, int rows, int cols, bool colour) {
  const int n = static_cast<int>(s.names.size());
  const int avail = std::max(1, rows - 1);
  cols = std::max(1, cols);
  std::vector<std::string> out;
  auto paint = [&](const std::string& code, const std::string& text) {
    return colour ? code + text + kReset : text;
  };
  auto name_of = [&](int w) { return terminal_safe(s.names[w]); };
  out.push_back(paint(kBold, fit_columns(terminal_safe(s.status), cols)));
  const int room = avail - 1;  // below the status line
  if (room >= 3 + 2 * n) {
    // Full frame: 2/3 of the room for the workers (at least one line each), the rest history.
    const int per_worker = std::max(1, room * 2 / 3 / std::max(1, n) - 1);
    const int hist_rows = room - 1 - n * (per_worker + 1);
    out.push_back(paint(kBold, fit_columns(fmt::format("-- shared history ({} finished steps) --",
                                                       s.history.size()),
                                           cols)));
    std::vector<std::string> hist;  // newest first
    for (auto it = s.history.rbegin(); it != s.history.rend() && (int)hist.size() < hist_rows;
         ++it) {
      auto lines = wrap_display(shown(it->second), cols);
      while (!lines.empty() && lines.back().empty()) lines.pop_back();
      for (auto l = lines.rbegin(); l != lines.rend() && (int)hist.size() < hist_rows; ++l)
        hist.push_back(paint(worker_colour(it->first) + kDim, *l));
    }
    for (auto l = hist.rbegin(); l != hist.rend(); ++l) out.push_back(*l);
    for (int w = 0; w < n; ++w) {
      out.push_back(paint(worker_colour(w) + kBold, fit_columns("-- " + name_of(w) + " --", cols)));
      auto lines = wrap_display(shown(s.current[w]), cols);
      const int from = std::max(0, static_cast<int>(lines.size()) - per_worker);
      for (int i = from; i < static_cast<int>(lines.size()); ++i)
        out.push_back(paint(worker_colour(w), lines[i]));
    }
  } else {
    // Little room: one line per worker, "Name: <end of its current step>", as many as fit.
    for (int w = 0; w < n && static_cast<int>(out.size()) < avail; ++w) {
      std::string text = shown(s.current[w]);
      for (char& c : text)
        if (c == '\n' || c == '\t') c = ' ';
      const std::string label = name_of(w) + ": ";
      const int left = cols - display_width(label);
      out.push_back(paint(worker_colour(w), left > 0 ? label + fit_columns(text, left, true)
                                                     : fit_columns(label, cols)));
    }
  }
  if (static_cast<int>(out.size()) > avail) out.resize(avail);
  return out;
}

LiveView::LiveView(std::FILE* out, std::vector<std::string> names, LiveViewOptions opt)
    : out_(out),
      names_(std::move(names)),
      opt_(std::move(opt)),
      current_(names_.size()),
      start_(std::chrono::steady_clock::now()),
      last_status_(start_) {}

std::string LiveView::status_line() const {
  const double t = seconds(std::chrono::steady_clock::now() - start_);
  std::string s = fmt::format("serial step {} / {} | {:.1f} s | {:.1f} tok/s | {} tokens", serial_,
                              opt_.budget > 0 ? std::to_string(opt_.budget) : "no budget", t,
                              t > 0 ? tokens_ / t : 0.0, tokens_);
  if (opt_.n_snapshots > 0)
    s += fmt::format(" | snapshots {}/{}", snapshots_done_, opt_.n_snapshots);
  s += " | answer: " + (answer_ ? *answer_ : std::string("none yet"));
  return s;
}

void LiveView::on_forward(const ForwardRecord& r) {
  serial_ = r.serial_step;
  redraw(false);
  status(false);
}

void LiveView::on_step_start(int w, int, const std::string& b, bool) { current_[w] = b; }

void LiveView::on_token(const TokenEvent& e) {
  ++tokens_;
  if (!e.eos) current_[e.worker] += e.bytes;
}

void LiveView::on_step_end(int w, int k, const std::string& t,
                           const std::optional<std::string>& a) {
  history_.emplace_back(w, t);
  current_[w].clear();
  if (a) answer_ = terminal_safe(*a) + " (" + names_[w] + ")";
  if (!opt_.redraw) {
    std::string line = terminal_safe(t);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    fmt::print(out_, "[serial step {}] {}\n", serial_, line);
    if (a) fmt::print(out_, "[answer from {}] {}\n", names_[w], terminal_safe(*a));
    std::fflush(out_);
  }
}

void LiveView::on_snapshot(const FinisherResult& f) {
  ++snapshots_done_;
  if (!opt_.redraw) {
    fmt::print(out_, "[snapshot at serial step {}] answer: {}\n", f.serial_step,
               f.answer ? terminal_safe(*f.answer) : "(none)");
    std::fflush(out_);
  }
}

void LiveView::on_note(const std::string& author, const std::string& text, int64_t serial_step) {
  history_.emplace_back(-1, text);
  if (!opt_.redraw) {
    std::string line = terminal_safe(text);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    fmt::print(out_, "[serial step {}] [note from {}] {}\n", serial_step, terminal_safe(author),
               line);
    std::fflush(out_);
  }
}

void LiveView::status(bool force) {
  if (!opt_.status) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && seconds(now - last_status_) < opt_.status_every_seconds) return;
  last_status_ = now;
  if (opt_.status_in_place)
    fmt::print(opt_.status, "\r{}\x1b[K", fit_columns(status_line(), 200));
  else
    fmt::print(opt_.status, "[hogwild] {}\n", status_line());
  std::fflush(opt_.status);
}

void LiveView::redraw(bool force) {
  if (!opt_.redraw) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  int rows, cols;
  terminal_size(out_, rows, cols);
  FrameState st{status_line() + " (Ctrl-C stops)", names_, current_, history_};
  std::string s = "\x1b[H";
  for (const std::string& line : render_frame(st, rows, cols, opt_.colour)) s += line + "\x1b[K\n";
  s += "\x1b[J";
  std::fwrite(s.data(), 1, s.size(), out_);
  std::fflush(out_);
}

void LiveView::finish(const SessionResult& r, const std::string& title) {
  redraw(true);
  if (opt_.status && opt_.status_in_place) {
    fmt::print(opt_.status, "\r\x1b[K");
    std::fflush(opt_.status);
  }
  const int n = static_cast<int>(names_.size());
  const bool bold = opt_.colour;
  if (!opt_.redraw) {
    for (int w = 0; w < n; ++w) {
      std::string t = terminal_safe(current_[w]);
      if (!t.empty()) fmt::print(out_, "[unfinished] {}\n", t);
    }
  }
  fmt::print(out_, "\n{}{}{}\n", bold ? kBold : "", title, bold ? kReset : "");
  for (const std::string& s : opt_.settings) fmt::print(out_, "{}\n", s);
  for (const std::string& s : opt_.warnings) fmt::print(out_, "warning: {}\n", s);
  fmt::print(out_, "answer: {}\n", r.answer ? terminal_safe(*r.answer) : "(none)");
  const std::string who = r.answer_worker >= 0 ? names_[r.answer_worker]
                          : r.finisher         ? "finisher"
                                               : "";
  fmt::print(out_, "stop: {}{}\n", stop_reason_name(r.stop_reason),
             who.empty() ? std::string() : " (answer by " + who + ")");
  int64_t total = 0;
  std::string per;
  for (int w = 0; w < n; ++w) {
    total += r.tokens_per_worker[w];
    per += fmt::format("{}{}={}", w ? " " : "", names_[w], r.tokens_per_worker[w]);
  }
  const double tps = r.decode_seconds > 0 ? total / r.decode_seconds : 0.0;
  fmt::print(out_, "serial steps: {}{}   tokens: {} ({})   prompt: {} tokens{}\n", r.serial_steps,
             opt_.budget > 0 ? fmt::format(" of {}", opt_.budget) : "", total, per, r.prompt_tokens,
             r.prompt_cached_tokens > 0
                 ? fmt::format(" ({} from the prefix cache)", r.prompt_cached_tokens)
                 : "");
  fmt::print(out_,
             "speed: {:.1f} tok/s total, {:.1f} tok/s per worker   time: prefill {:.2f} s, "
             "decode {:.2f} s ({:.2f} s in forwards), finisher {:.2f} s\n",
             tps, n ? tps / n : 0.0, r.prefill_seconds, r.decode_seconds, r.decode_forward_seconds,
             r.finisher_seconds);
  if (!r.forgotten.empty()) {  // the KV budget (forgetting.h): the transcript holds the ranges
    const ForgetEvent& last = r.forgotten.back();
    const auto summarised =
        std::count_if(r.forgotten.begin(), r.forgotten.end(),
                      [](const ForgetEvent& e) { return e.summary_worker >= 0; });
    fmt::print(
        out_,
        "kv budget: {} history tokens forgotten ({} time{}{}); {} of {} still read at the end\n",
        r.forgotten_tokens, r.forgotten.size(), r.forgotten.size() == 1 ? "" : "s",
        summarised > 0 ? fmt::format(", {} by a summary step", summarised) : std::string(),
        last.kept, last.history_len);
  }
  for (auto& f : r.snapshots)
    fmt::print(out_, "snapshot @{}{}: {}\n", f.serial_step, f.reached ? "" : " (after the end)",
               f.answer ? terminal_safe(*f.answer) : "(none)");
  std::fflush(out_);
}

}  // namespace hogwild
