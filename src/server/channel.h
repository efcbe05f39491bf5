// The hand-over of one request's events from the engine thread (producer) to the HTTP thread that
// answers it (consumer): a mutex-guarded queue with a condition variable. Events carry text
// already made valid UTF-8; JSON is built on the HTTP thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/stop_reason.h"

namespace hogwild::server {

/// One event of one choice of a request.
struct Event {
  enum class Kind {
    accepted,    // the engine took the request (first event), or `error` says why not
    started,     // the choice's session began (its prefill ran)
    step_start,  // worker `worker` opened step `step`: text = the opening (prefix, check question)
    token,       // worker text delta (hogwild): text, step, serial_step
    step_end,    // text = the whole step, answer when it holds one
    note,        // a person's note: author, text; serial_step = the forward that wrote it
    content,     // delta of the choice's content (the answer for hogwild, the text for plain)
    done,        // the choice ended: finish_reason, stop_reason, stats / error; answer = the
                 // hogwild answer whole (the content is cut by the stop strings)
  };
  Event() = default;
  explicit Event(Kind k) : kind(k) {}

  Kind kind = Kind::content;
  int choice = 0;
  int worker = -1;
  int step = 0;
  int64_t serial_step = 0;
  std::string text;
  std::string author;  // note
  bool collab_check = false;
  std::optional<std::string> answer;
  // done
  std::string finish_reason;                  // "stop" | "length" | "cancelled" | "error"
  StopReason stop_reason = StopReason::none;  // the session's (SessionResult::stop_reason) or stop
  std::optional<std::string> error;
  int64_t prompt_tokens = 0;
  int64_t prompt_cached_tokens = 0;  // of them, shared from the prefix cache
  std::vector<int64_t> tokens_per_worker;
  int64_t serial_steps = 0;
  double prefill_seconds = 0, decode_seconds = 0, finisher_seconds = 0;
  // Independent layout (self-consistency): each worker's answer, in worker order (the content is
  // their vote). Skeleton-of-Thought: the outline's points.
  std::vector<std::optional<std::string>> worker_answers;
  std::vector<std::string> outline;
};

class Channel {
 public:
  void push(Event e) {
    {
      std::lock_guard<std::mutex> l(m_);
      q_.push_back(std::move(e));
    }
    cv_.notify_all();
  }
  /// No more events will come.
  void close() {
    {
      std::lock_guard<std::mutex> l(m_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  /// Moves every queued event into `out` (appending), waiting up to `wait` for the first one.
  /// Returns false when the channel is closed and drained.
  bool pop_all(std::vector<Event>& out, std::chrono::milliseconds wait) {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait_for(l, wait, [&] { return !q_.empty() || closed_; });
    while (!q_.empty()) {
      out.push_back(std::move(q_.front()));
      q_.pop_front();
    }
    return !(closed_ && out.empty());
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Event> q_;
  bool closed_ = false;
};

}  // namespace hogwild::server
