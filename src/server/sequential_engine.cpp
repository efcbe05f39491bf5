#include "server/sequential_engine.h"

#include <algorithm>

#include "core/error.h"

namespace hogwild::server {

std::string note_text(const Formatting& f, const std::string& text) {
  return "**User note:** " + text + f.step_separator;
}

struct SequentialEngine::Entry {
  GenerationRequest req;
  GenerationObserver* obs = nullptr;
  std::atomic<bool> interrupt{false};
  std::unique_ptr<SamplerPicker> picker;
  std::unique_ptr<Session> session;
  std::deque<std::string> notes;  // queued note texts, oldest first, until inserted or dropped
  int64_t serial_step = 0;        // of the last forward
  bool done = false;
  std::optional<std::string> error;
  SessionResult result;
};

// Forwards a session's events to its observer; calls the engine's hook after every forward.
class SequentialEngine::Relay : public SessionObserver {
 public:
  Relay(Entry& e, const std::function<void()>& hook) : e_(e), hook_(hook) {}
  void on_forward(const ForwardRecord& r) override {
    e_.serial_step = r.serial_step;
    if (e_.obs) e_.obs->on_forward(r);
    if (hook_) hook_();
  }
  void on_step_start(int w, int k, const std::string& b, bool c) override {
    if (e_.obs) e_.obs->on_step_start(w, k, b, c);
  }
  void on_token(const TokenEvent& ev) override {
    if (e_.obs) e_.obs->on_token(ev);
  }
  void on_step_end(int w, int k, const std::string& t,
                   const std::optional<std::string>& a) override {
    if (e_.obs) e_.obs->on_step_end(w, k, t, a);
  }
  void on_snapshot(const FinisherResult& f) override {
    if (e_.obs) e_.obs->on_snapshot(f);
  }

 private:
  Entry& e_;
  const std::function<void()>& hook_;
};

SequentialEngine::SequentialEngine(Backend& backend, const TextCodec& codec,
                                   std::function<void()> between_steps)
    : backend_(backend), codec_(codec), between_steps_(std::move(between_steps)) {}

SequentialEngine::~SequentialEngine() = default;

SessionId SequentialEngine::submit(GenerationRequest req, GenerationObserver* obs) {
  auto e = std::make_unique<Entry>();
  e->req = std::move(req);
  e->obs = obs;
  SessionOptions opt = e->req.options;
  opt.interrupt = &e->interrupt;
  // The constructors check the worker count, budget, formatting and sampling ranges.
  e->picker = std::make_unique<SamplerPicker>(e->req.sampling, opt.n_workers, e->req.prompt);
  e->session =
      std::make_unique<Session>(backend_, codec_, e->req.formatting, opt, *e->picker);
  const SessionId id = next_id_++;
  entries_.emplace(id, std::move(e));
  queue_.push_back(id);
  return id;
}

void SequentialEngine::cancel(SessionId id) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second->done) return;
  Entry& e = *it->second;
  e.interrupt.store(true);
  if (id == running_) return;  // stops before its next serial step
  queue_.erase(std::remove(queue_.begin(), queue_.end(), id), queue_.end());
  e.result.stop_reason = "interrupted";
  e.done = true;
  if (e.obs)
    for (auto& n : e.notes) e.obs->on_note(n, -1);
  e.notes.clear();
}

void SequentialEngine::insert_note(SessionId id, const std::string& text) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second->done)
    fail("session {} is not running; a note can be inserted only while it runs", id);
  Entry& e = *it->second;
  const std::string t = note_text(e.req.formatting, text);
  e.notes.push_back(t);
  if (id == running_) backend_.queue_note(codec_.encode(t));
}

bool SequentialEngine::step() {
  if (queue_.empty()) return false;
  const SessionId id = queue_.front();
  queue_.pop_front();
  Entry& e = *entries_.at(id);
  running_ = id;
  const int64_t ctx = e.req.options.max_context > 0 ? e.req.options.max_context
                                                    : backend_.config().max_position_embeddings;
  backend_.begin_session(ctx, [&e](bool inserted, int64_t) {
    if (e.notes.empty()) return;
    const std::string t = std::move(e.notes.front());
    e.notes.pop_front();
    if (e.obs) e.obs->on_note(t, inserted ? e.serial_step + 1 : -1);
  });
  for (auto& t : e.notes) backend_.queue_note(codec_.encode(t));
  Relay relay(e, between_steps_);
  e.session->set_observer(&relay);
  try {
    e.result = e.session->run(e.req.prompt);
  } catch (const std::exception& ex) {
    e.error = ex.what();
  }
  backend_.end_session();
  e.session.reset();
  e.done = true;
  running_ = 0;
  return true;
}

bool SequentialEngine::finished(SessionId id) const {
  auto it = entries_.find(id);
  return it != entries_.end() && it->second->done;
}

SessionResult SequentialEngine::take_result(SessionId id) {
  auto it = entries_.find(id);
  if (it == entries_.end() || !it->second->done)
    fail("session {} has not finished; call take_result after finished() is true", id);
  std::unique_ptr<Entry> e = std::move(it->second);
  entries_.erase(it);
  if (e->error) throw Error(*e->error);
  return std::move(e->result);
}

CacheStats SequentialEngine::cache_stats() const {
  return {backend_.live_blocks(), backend_.cached_tokens()};
}

}  // namespace hogwild::server
