#include "hogwild/live_view.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

#include "hogwild/transcript.h"

namespace hogwild {

namespace {

constexpr const char* kReset = "\x1b[0m";
constexpr const char* kDim = "\x1b[2m";
constexpr const char* kBold = "\x1b[1m";

// Drops an incomplete UTF-8 sequence at the end (a character still being streamed).
std::string complete_utf8(const std::string& s) {
  size_t n = s.size(), i = n;
  while (i > 0 && n - i < 4 && (static_cast<unsigned char>(s[i - 1]) & 0xC0) == 0x80) --i;
  if (i == 0) return utf8_lossy(s);
  unsigned char lead = static_cast<unsigned char>(s[i - 1]);
  size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  if (need > 1 && n - (i - 1) < need) return utf8_lossy(s.substr(0, i - 1));
  return utf8_lossy(s);
}

// Splits text into display lines of at most `width` code points.
std::vector<std::string> wrap(const std::string& text, int width) {
  std::vector<std::string> lines(1);
  int col = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      lines.emplace_back();
      col = 0;
      continue;
    }
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      if (col == width) {
        lines.emplace_back();
        col = 0;
      }
      ++col;
    }
    lines.back() += c;
  }
  return lines;
}

void terminal_size(int& rows, int& cols) {
  winsize ws{};
  rows = 24;
  cols = 80;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
    rows = ws.ws_row;
    cols = ws.ws_col;
  }
}

}  // namespace

LiveView::LiveView(std::FILE* out, bool tty, std::vector<std::string> names)
    : out_(out), tty_(tty), names_(std::move(names)), current_(names_.size()) {}

std::string LiveView::colour(int w) const {
  static const int kColours[] = {36, 33, 35, 32, 34, 31, 96, 93};  // cyan yellow magenta ...
  return tty_ ? fmt::format("\x1b[{}m", kColours[w % 8]) : "";
}

void LiveView::on_forward(const ForwardRecord& r) {
  serial_ = r.serial_step;
  redraw(false);
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
  if (!tty_) {
    std::string line = utf8_lossy(t);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    fmt::print(out_, "[serial step {}] {}\n", serial_, line);
    if (a) fmt::print(out_, "[answer from {}] {}\n", names_[w], *a);
    std::fflush(out_);
  }
}

void LiveView::on_snapshot(const FinisherResult& f) {
  if (!tty_) {
    fmt::print(out_, "[snapshot at serial step {}] answer: {}\n", f.serial_step,
               f.answer ? *f.answer : "(none)");
    std::fflush(out_);
  }
}

void LiveView::redraw(bool force) {
  if (!tty_) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  int rows, cols;
  terminal_size(rows, cols);
  const int n = static_cast<int>(names_.size());
  const int per_worker = std::max(2, (rows - 4) * 2 / 3 / n - 1);
  const int hist_rows = std::max(1, rows - 3 - n * (per_worker + 1));
  std::string s = "\x1b[H\x1b[2J";
  s += fmt::format("{}hogwild: {} workers, serial step {}, {} tokens (Ctrl-C stops){}\n", kBold, n,
                   serial_, tokens_, kReset);
  // Shared history: the newest finished steps that fit.
  std::vector<std::string> hist;
  for (auto it = history_.rbegin(); it != history_.rend() && (int)hist.size() < hist_rows; ++it) {
    auto lines = wrap(complete_utf8(it->second), cols);
    while (!lines.empty() && lines.back().empty()) lines.pop_back();
    for (auto l = lines.rbegin(); l != lines.rend() && (int)hist.size() < hist_rows; ++l)
      hist.push_back(colour(it->first) + kDim + *l + kReset);
  }
  s +=
      fmt::format("{}-- shared history ({} finished steps) --{}\n", kBold, history_.size(), kReset);
  for (auto l = hist.rbegin(); l != hist.rend(); ++l) s += *l + "\n";
  for (int w = 0; w < n; ++w) {
    s += fmt::format("{}{}-- {} --{}\n", colour(w), kBold, names_[w], kReset);
    auto lines = wrap(complete_utf8(current_[w]), cols);
    int from = std::max(0, static_cast<int>(lines.size()) - per_worker);
    for (int i = from; i < static_cast<int>(lines.size()); ++i)
      s += colour(w) + lines[i] + kReset + "\n";
  }
  std::fwrite(s.data(), 1, s.size(), out_);
  std::fflush(out_);
}

void LiveView::finish(const SessionResult& r, const std::string& title) {
  redraw(true);
  const int n = static_cast<int>(names_.size());
  if (!tty_) {
    for (int w = 0; w < n; ++w) {
      std::string t = utf8_lossy(current_[w]);
      if (!t.empty()) fmt::print(out_, "[unfinished] {}\n", t);
    }
  }
  fmt::print(out_, "\n{}{}{}\n", tty_ ? kBold : "", title, tty_ ? kReset : "");
  fmt::print(out_, "answer: {}\n", r.answer ? *r.answer : "(none)");
  std::string who = r.answer_worker >= 0 ? names_[r.answer_worker] : r.finisher ? "finisher" : "-";
  fmt::print(out_, "stop: {} (answer by {})\n", r.stop_reason, who);
  int64_t total = 0;
  std::string per;
  for (int w = 0; w < n; ++w) {
    total += r.tokens_per_worker[w];
    per += fmt::format("{}{}={}", w ? " " : "", names_[w], r.tokens_per_worker[w]);
  }
  const double tps = r.decode_seconds > 0 ? total / r.decode_seconds : 0.0;
  fmt::print(out_, "serial steps: {}   tokens: {} ({})   prompt: {} tokens\n", r.serial_steps,
             total, per, r.prompt_tokens);
  fmt::print(out_,
             "speed: {:.1f} tok/s total, {:.1f} tok/s per worker   time: prefill {:.2f} s, "
             "decode {:.2f} s ({:.2f} s in forwards), finisher {:.2f} s\n",
             tps, n ? tps / n : 0.0, r.prefill_seconds, r.decode_seconds,
             r.decode_forward_seconds, r.finisher_seconds);
  for (auto& f : r.snapshots)
    fmt::print(out_, "snapshot @{}{}: {}\n", f.serial_step, f.reached ? "" : " (after the end)",
               f.answer ? *f.answer : "(none)");
  std::fflush(out_);
}

}  // namespace hogwild
