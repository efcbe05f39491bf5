// Progress line; see progress.h.
#include "eval/progress.h"

#include <fmt/format.h>

namespace hogwild::eval {

std::string format_duration(double s) {
  if (s < 0 || s != s) return "?";
  const int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, t % 3600 / 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

Progress::Progress(size_t total, bool tty, std::FILE* out)
    : total_(total),
      tty_(tty),
      out_(out),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

std::string Progress::line() const {
  const double el =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string s = fmt::format("{}/{} problems", done_, total_);
  if (done_ > 0) s += fmt::format(", accuracy {:.1f}%", 100.0 * correct_ / done_);
  s += fmt::format(", {:.0f} tok/s", el > 0 ? tokens_ / el : 0.0);
  if (done_ > 0 && done_ < total_)
    s += ", ETA " + format_duration(el / done_ * static_cast<double>(total_ - done_));
  else if (done_ == total_)
    s += ", " + format_duration(el);
  return s;
}

void Progress::draw(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(250)) return;
  last_draw_ = now;
  std::fprintf(out_, "\r\033[Keval: %s", line().c_str());
  std::fflush(out_);
}

void Progress::tokens(int64_t n) {
  tokens_ += n;
  if (tty_) draw(false);
}

void Progress::job_done(const std::string& id, bool correct) {
  ++done_;
  correct_ += correct;
  if (tty_) {
    draw(true);
  } else {
    std::fprintf(out_, "eval: %s (%s: %s)\n", line().c_str(), id.c_str(),
                 correct ? "correct" : "wrong");
    std::fflush(out_);
  }
}

void Progress::finish() {
  if (tty_) {
    draw(true);
    std::fprintf(out_, "\n");
  }
  std::fflush(out_);
}

}  // namespace hogwild::eval
