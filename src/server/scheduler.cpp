#include "server/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "hogwild/transcript.h"
#include "sampling/stop_strings.h"
#include "server/api_error.h"
#include "server/text_stream.h"

namespace hogwild::server {

using Clock = std::chrono::steady_clock;

namespace {
double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

std::string decode_all(const std::string& bytes) {
  Utf8Decoder d;
  return d.push(bytes) + d.flush();
}
}  // namespace

struct Scheduler::Command {
  enum class Kind { submit, cancel, steer, cancel_all };
  Kind kind = Kind::submit;
  std::shared_ptr<Request> req;              // submit
  std::string id;                            // cancel, steer
  std::string author, text;                  // steer
  std::shared_ptr<std::promise<void>> done;  // steer
};

struct Scheduler::Request {
  Job job;
  std::shared_ptr<Channel> channel = std::make_shared<Channel>();
  std::vector<std::unique_ptr<ChoiceObserver>> observers;
  std::vector<SessionId> sids;
  Clock::time_point submitted{};
  int open = 0;            // choices whose sessions have not been collected
  bool started = false;    // a session of it ran (counted as running, not queued)
  bool any_token = false;  // a token of it was sampled (time to first token taken)
  bool cancelled = false;
  bool failed = false;
};

// Turns one choice's session events into Events (engine thread): per-worker UTF-8 decoding,
// stop strings on the content, cancel of the session when a stop string completes.
class Scheduler::ChoiceObserver : public SessionObserver {
 public:
  ChoiceObserver(Scheduler& s, Request& r, int choice)
      : s_(s), r_(r), choice_(choice), stop_(r.job.stop) {
    dec_.resize(r.job.choices.at(choice).options.n_workers);
    step_.assign(dec_.size(), 1);
  }
  void set_session(SessionId sid) { sid_ = sid; }

  void on_forward(const ForwardRecord& rec) override {
    const auto now = Clock::now();
    if (!started_) {
      started_ = true;
      push(Event(Event::Kind::started));
      std::lock_guard<std::mutex> l(s_.m_);
      if (!r_.started) {
        r_.started = true;
        s_.stats_.queued -= 1;
        s_.stats_.running += 1;
        s_.stats_.queue_seconds.observe(seconds(r_.submitted, now));
        s_.method_stats(r_.job).queue_seconds.observe(seconds(r_.submitted, now));
      }
    } else if (rec.serial_step > 0) {
      std::lock_guard<std::mutex> l(s_.m_);
      s_.stats_.serial_steps += 1;
      s_.stats_.step_seconds += std::chrono::duration<double>(now - last_).count();
    }
    last_ = now;
  }
  void on_step_start(int w, int k, const std::string& bytes, bool collab) override {
    if (!r_.job.hogwild) return;
    step_.at(w) = k;
    Event e{Event::Kind::step_start};
    e.worker = w;
    e.step = k;
    e.text = decode_all(bytes);
    e.collab_check = collab;
    push(std::move(e));
  }
  void on_token(const TokenEvent& t) override {
    {
      const auto now = Clock::now();
      std::lock_guard<std::mutex> l(s_.m_);
      MethodStats& ms = s_.method_stats(r_.job);
      s_.stats_.generated_tokens += 1;
      ms.generated_tokens += 1;
      if (!r_.any_token) {
        r_.any_token = true;
        if (r_.job.received != Clock::time_point{}) {
          s_.stats_.ttft_seconds.observe(seconds(r_.job.received, now));
          ms.ttft_seconds.observe(seconds(r_.job.received, now));
        }
      }
      if (t.serial_step != token_serial_) {  // the first token of this forward
        if (token_serial_ >= 0) {
          s_.stats_.itl_seconds.observe(seconds(token_time_, now));
          ms.itl_seconds.observe(seconds(token_time_, now));
        }
        token_serial_ = t.serial_step;
        token_time_ = now;
      }
    }
    if (t.eos) {  // the worker stopped on it: not part of the text
      eos_seen_ = true;
      return;
    }
    std::string text = dec_.at(t.worker).push(t.bytes);
    if (r_.job.hogwild) {
      if (text.empty()) return;
      Event e{Event::Kind::token};
      e.worker = t.worker;
      e.step = t.step;
      e.serial_step = t.serial_step;
      e.text = std::move(text);
      push(std::move(e));
      return;
    }
    content(stop_.push(text));
    if (stop_.stopped() && !stopped_) {
      stopped_ = true;
      s_.to_cancel_.push_back(sid_);  // cancelled right after this engine step
    }
  }
  void on_step_end(int w, int k, const std::string& text,
                   const std::optional<std::string>& answer) override {
    if (!r_.job.hogwild) return;
    Event e{Event::Kind::step_end};
    e.worker = w;
    e.step = k;
    e.text = decode_all(text);  // as the token events decode it (maximal subparts)
    e.answer = answer;
    push(std::move(e));
  }
  void on_note(const std::string& author, const std::string& text, int64_t serial_step) override {
    Event e{Event::Kind::note};
    e.text = decode_all(text);
    e.author = author;
    e.serial_step = serial_step;
    push(std::move(e));
    std::lock_guard<std::mutex> l(s_.m_);
    s_.stats_.notes_inserted += 1;
  }

  /// The session ended: the rest of the text, then `done`.
  void finish(const SessionResult* res, const std::string* error) {
    Event d{Event::Kind::done};
    if (error) {
      d.finish_reason = "error";
      d.error = *error;
      push(std::move(d));
      return;
    }
    if (r_.job.hogwild) {
      for (size_t w = 0; w < dec_.size(); ++w) {
        std::string tail = dec_[w].flush();
        if (tail.empty()) continue;
        Event e{Event::Kind::token};
        e.worker = static_cast<int>(w);
        e.step = step_[w];
        e.text = std::move(tail);
        e.serial_step = res->serial_steps;
        push(std::move(e));
      }
      if (res->answer) {  // the stop strings cut the content, not the answer in "hogwild"
        d.answer = decode_all(*res->answer);
        content(stop_.push(*d.answer));
        content(stop_.flush());
      }
    } else {
      content(stop_.push(dec_[0].flush()));
      content(stop_.flush());
      stopped_ = stopped_ || stop_.stopped();  // a stop string the last bytes completed
    }
    // A plain completion stops ("stop") on a stop string or an end-of-sequence token it drew;
    // anything else is its length (max_tokens, which the context caps), as OpenAI and vLLM
    // report (engine/plain.h).
    d.stop_reason = stopped_ ? StopReason::stop : res->stop_reason;
    if ((res->stop_reason == StopReason::cancelled ||
         res->stop_reason == StopReason::interrupted) &&
        !stopped_)
      d.finish_reason = "cancelled";
    else if (r_.job.hogwild)
      d.finish_reason = res->answer ? "stop" : "length";
    else
      d.finish_reason = stopped_ || eos_seen_ ? "stop" : "length";
    d.prompt_tokens = res->prompt_tokens;
    d.prompt_cached_tokens = res->prompt_cached_tokens;
    d.tokens_per_worker = res->tokens_per_worker;
    d.serial_steps = res->serial_steps;
    d.prefill_seconds = res->prefill_seconds;
    d.decode_seconds = res->decode_seconds;
    d.finisher_seconds = res->finisher_seconds;
    for (const WorkerResult& w : res->workers)
      d.worker_answers.push_back(w.answer ? std::optional(decode_all(*w.answer)) : std::nullopt);
    for (const std::string& p : res->outline_points) d.outline.push_back(decode_all(p));
    push(std::move(d));
  }

 private:
  void push(Event e) {
    e.choice = choice_;
    r_.channel->push(std::move(e));
  }
  void content(std::string text) {
    if (text.empty()) return;
    Event e{Event::Kind::content};
    e.text = std::move(text);
    push(std::move(e));
  }

  Scheduler& s_;
  Request& r_;
  int choice_;
  SessionId sid_ = 0;
  std::vector<Utf8Decoder> dec_;  // (n_workers)
  std::vector<int> step_;         // (n_workers) each worker's current step
  StopStrings stop_;
  bool stopped_ = false, started_ = false;
  bool eos_seen_ = false;  // a worker drew an end-of-sequence token
  Clock::time_point last_{};
  int64_t token_serial_ = -1;       // serial step of the last token (-1: none yet)
  Clock::time_point token_time_{};  // when it came
};

Scheduler::Scheduler(std::function<std::unique_ptr<GenerationEngine>()> make_engine,
                     size_t max_requests)
    : max_requests_(max_requests) {
  for (const char* m : kMethods) stats_.by_method[m];
  thread_ = std::thread([this, make = std::move(make_engine)]() mutable { loop(std::move(make)); });
}

Scheduler::~Scheduler() { stop(); }

std::shared_ptr<Channel> Scheduler::submit(Job job) {
  auto r = std::make_shared<Request>();
  r->job = std::move(job);
  r->submitted = Clock::now();
  {
    std::lock_guard<std::mutex> l(m_);
    if (draining_ || stopping_ || admitted_ >= max_requests_) {
      stats_.requests_rejected += 1;
      method_stats(r->job).rejected += 1;
    }
    if (draining_ || stopping_)
      throw ApiError(503, "server_error", "the server is shutting down; retry on another server",
                     "", "shutting_down");
    if (admitted_ >= max_requests_)
      throw ApiError(429, "rate_limit_error",
                     fmt::format("the server has {} requests in progress, its limit (--max-queue + "
                                 "--max-sessions); retry later",
                                 admitted_),
                     "", "queue_full");
    admitted_ += 1;
    stats_.queued += 1;
    if (r->job.received != Clock::time_point{}) {
      stats_.prepare_seconds.observe(seconds(r->job.received, r->submitted));
      method_stats(r->job).prepare_seconds.observe(seconds(r->job.received, r->submitted));
    }
    Command c;
    c.kind = Command::Kind::submit;
    c.req = r;
    commands_.push_back(std::move(c));
  }
  cv_.notify_all();
  return r->channel;
}

void Scheduler::cancel(const std::string& id) {
  {
    std::lock_guard<std::mutex> l(m_);
    Command c;
    c.kind = Command::Kind::cancel;
    c.id = id;
    commands_.push_back(std::move(c));
  }
  cv_.notify_all();
}

void Scheduler::steer(const std::string& id, const std::string& author, const std::string& text) {
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  {
    std::lock_guard<std::mutex> l(m_);
    if (stopping_) throw ApiError(503, "server_error", "the server is shutting down");
    Command c;
    c.kind = Command::Kind::steer;
    c.id = id;
    c.author = author;
    c.text = text;
    c.done = done;
    commands_.push_back(std::move(c));
  }
  cv_.notify_all();
  fut.get();  // rethrows the engine thread's ApiError
}

void Scheduler::drain() {
  std::lock_guard<std::mutex> l(m_);
  draining_ = true;
}

void Scheduler::cancel_all() {
  {
    std::lock_guard<std::mutex> l(m_);
    Command c;
    c.kind = Command::Kind::cancel_all;
    commands_.push_back(std::move(c));
  }
  cv_.notify_all();
}

size_t Scheduler::active() const {
  std::lock_guard<std::mutex> l(m_);
  return admitted_;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> l(m_);
  return stats_;
}

void Scheduler::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> l(m_);
    stopping_ = true;
  }
  cancel_all();
  thread_.join();
}

void Scheduler::loop(std::function<std::unique_ptr<GenerationEngine>()> make) {
  try {
    engine_ = make();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve: the engine could not start: %s\n", e.what());
    std::abort();
  }
  while (true) {
    poll();
    {
      std::lock_guard<std::mutex> l(m_);
      if (stopping_ && requests_.empty() && commands_.empty()) break;
    }
    const bool worked = engine_->step();
    if (const ForwardCounts f = engine_->last_forward(); f.sessions > 0) {
      std::lock_guard<std::mutex> l(m_);
      stats_.forward_sessions.observe(static_cast<double>(f.sessions));
      stats_.forward_prefills.observe(static_cast<double>(f.prefill_chunks));
      stats_.forward_sessions_max = std::max(stats_.forward_sessions_max, f.sessions);
    }
    poll();
    if (!worked) {
      std::unique_lock<std::mutex> l(m_);
      cv_.wait_for(l, std::chrono::milliseconds(50),
                   [&] { return !commands_.empty() || stopping_; });
    }
  }
  engine_.reset();
}

void Scheduler::poll() {
  std::vector<Command> cmds;
  {
    std::lock_guard<std::mutex> l(m_);
    cmds.swap(commands_);
  }
  for (SessionId sid : to_cancel_) engine_->cancel(sid);
  to_cancel_.clear();
  for (auto& c : cmds) run_command(c);
  collect();
  const EngineGauges cache = engine_->gauges();
  std::lock_guard<std::mutex> l(m_);
  stats_.cache = cache;
}

void Scheduler::run_command(Command& c) {
  using K = Command::Kind;
  switch (c.kind) {
    case K::submit:
      return start_request(c.req);
    case K::cancel_all:
      for (auto& [id, r] : requests_) {
        r->cancelled = true;
        for (SessionId sid : r->sids) engine_->cancel(sid);
      }
      return;
    case K::cancel:
      if (auto it = requests_.find(c.id); it != requests_.end()) {
        it->second->cancelled = true;
        for (SessionId sid : it->second->sids) engine_->cancel(sid);
      }
      return;
    case K::steer:
      try {
        insert_note(c.id, c.author, c.text);
        c.done->set_value();
      } catch (...) {
        c.done->set_exception(std::current_exception());
      }
      return;
  }
}

void Scheduler::start_request(const std::shared_ptr<Request>& req) {
  Request& r = *req;
  Event acc{Event::Kind::accepted};
  try {
    for (size_t i = 0; i < r.job.choices.size(); ++i) {
      r.observers.push_back(std::make_unique<ChoiceObserver>(*this, r, static_cast<int>(i)));
      const SessionId sid = engine_->submit(r.job.choices[i], r.observers.back().get());
      r.observers.back()->set_session(sid);
      r.sids.push_back(sid);
      sessions_[sid] = {req, static_cast<int>(i)};
      r.open += 1;
    }
  } catch (const std::exception& e) {
    acc.error = e.what();
    r.failed = true;
    for (SessionId sid : r.sids) engine_->cancel(sid);
  }
  r.channel->push(std::move(acc));
  if (r.open == 0) {  // refused before any session: answered now
    r.channel->close();
    std::lock_guard<std::mutex> l(m_);
    admitted_ -= 1;
    stats_.queued -= 1;
    stats_.requests_failed += 1;
    method_stats(r.job).failed += 1;
    return;
  }
  requests_[r.job.id] = req;
}

void Scheduler::insert_note(const std::string& id, const std::string& author,
                            const std::string& text) {
  auto it = requests_.find(id);
  if (it == requests_.end() && ended_.count(id)) {
    if (!ended_.at(id))
      throw ApiError(409, "invalid_request_error",
                     "this request was a plain completion, and it has ended; notes go to running "
                     "hogwild sessions",
                     "id", "not_hogwild");
    throw ApiError(409, "invalid_request_error",
                   "the session has already ended; a note can only go to a running session", "id",
                   "session_ended");
  }
  if (it == requests_.end())
    throw ApiError(404, "not_found_error",
                   "no running session has this id; give the id of a running hogwild request "
                   "(the \"id\" of its response or of its first stream chunk)",
                   "id", "session_not_found");
  if (!it->second->job.hogwild)
    throw ApiError(409, "invalid_request_error",
                   "this request is a plain completion; notes go to hogwild sessions (requests "
                   "with a \"hogwild\" object)",
                   "id", "not_hogwild");
  int taken = 0;
  for (SessionId sid : it->second->sids) {
    if (engine_->finished(sid)) continue;
    try {
      engine_->insert_note(sid, author, text);
      taken += 1;
    } catch (const Error&) {
    }
  }
  if (taken == 0)
    throw ApiError(409, "invalid_request_error", "the session has already ended", "id",
                   "session_ended");
}

void Scheduler::remember_ended(const std::string& id, bool hogwild) {
  if (!ended_.emplace(id, hogwild).second) return;
  ended_order_.push_back(id);
  if (ended_order_.size() > kEndedRemembered) {
    ended_.erase(ended_order_.front());
    ended_order_.pop_front();
  }
}

void Scheduler::collect() {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    const SessionId sid = it->first;
    if (!engine_->finished(sid)) {
      ++it;
      continue;
    }
    auto [r, choice] = it->second;
    it = sessions_.erase(it);
    try {
      SessionResult res = engine_->take_result(sid);
      r->observers[choice]->finish(&res, nullptr);
      std::lock_guard<std::mutex> l(m_);
      stats_.prompt_tokens += res.prompt_tokens;
      method_stats(r->job).prompt_tokens += res.prompt_tokens;
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      r->failed = true;
      r->observers[choice]->finish(nullptr, &msg);
    }
    if (--r->open > 0) continue;
    requests_.erase(r->job.id);
    remember_ended(r->job.id, r->job.hogwild);
    const EngineGauges cache = engine_->gauges();
    {  // counted before the client can see its answer (tests read /metrics right after)
      std::lock_guard<std::mutex> l(m_);
      stats_.cache = cache;
      admitted_ -= 1;
      if (r->started)
        stats_.running -= 1;
      else
        stats_.queued -= 1;
      MethodStats& ms = method_stats(r->job);
      if (r->failed) {
        stats_.requests_failed += 1;
        ms.failed += 1;
      } else if (r->cancelled) {
        stats_.requests_cancelled += 1;
        ms.cancelled += 1;
      } else {
        stats_.requests_finished += 1;
        ms.finished += 1;
      }
    }
    r->channel->close();
  }
}

}  // namespace hogwild::server
