#include "engine/engine.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "hogwild/batch.h"
#include "hogwild/picker.h"

namespace hogwild {

namespace {
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Engine::Engine(Backend& backend, const TextCodec& codec, EngineOptions options)
    : be_(backend), codec_(codec), opt_(options) {
  if (opt_.max_sessions < 1) fail("max_sessions must be >= 1, got {}", opt_.max_sessions);
  if (opt_.max_queue < 0) fail("max_queue must be >= 0, got {}", opt_.max_queue);
  if (opt_.max_batch_tokens < 1)
    fail("max_batch_tokens must be >= 1, got {}", opt_.max_batch_tokens);
  if (opt_.prefill_chunk < 1) fail("prefill_chunk must be >= 1, got {}", opt_.prefill_chunk);
  limit_ = opt_.kv_tokens > 0 ? opt_.kv_tokens : be_.kv_capacity_tokens();
}

Engine::~Engine() {
  for (auto& e : active_) e->session->release();
}

SessionId Engine::submit(SessionRequest request) {
  auto e = std::make_unique<Entry>();
  e->id = next_id_;
  e->request = std::move(request);
  SessionRequest& r = e->request;
  if (!r.picker)
    r.picker = std::make_unique<SamplerPicker>(r.sampling, r.options.n_workers, r.prompt);
  e->session = std::make_unique<Session>(be_, codec_, r.formatting, r.options, *r.picker);
  if (opt_.prefix_cache) e->session->use_prefix_cache();
  e->session->start(r.prompt);  // checks the prompt against the context; creates no blocks
  if (r.observer) e->session->set_observer(r.observer);
  e->kv_need = Session::kv_tokens_needed(r.options, r.formatting, codec_, be_.config(),
                                         static_cast<int64_t>(r.prompt.size()));
  if (limit_ > 0 && e->kv_need > limit_)
    fail(
        "this request can fill up to {} KV tokens ({} prompt tokens, {} workers, budget {}) but "
        "the cache holds {}; lower the budget or the context limit, use fewer workers, or give "
        "the cache more memory",
        e->kv_need, r.prompt.size(), r.options.n_workers, r.options.budget, limit_);
  if (static_cast<int64_t>(queue_.size()) >= opt_.max_queue)
    fail("the queue is full ({} sessions wait); retry later", queue_.size());
  ++next_id_;
  const SessionId id = e->id;
  queue_.push_back(std::move(e));
  return id;
}

void Engine::admit() {
  share_awaited();
  while (!queue_.empty() && static_cast<int64_t>(active_.size()) < opt_.max_sessions) {
    Entry& e = *queue_.front();
    // The cached pages of its prompt: shared, they need no reservation of their own, but the
    // idle ones join the pages no reservation covers.
    const PrefixHit hit = e.session->cached_prompt();
    const auto [leader, awaited] = prefix_leader(e, hit.tokens);
    if (leader != 0) {
      // More pages come from a session still prefilling: the whole need until they are shared.
      if (limit_ > 0 && reserved_ + e.kv_need + be_.kv_unowned_tokens() > limit_) break;
      e.leader = leader;
      e.awaited = awaited;
      reserved_ += e.kv_need;
    } else {
      const int64_t need = e.kv_need - hit.tokens;
      if (limit_ > 0 &&
          reserved_ + need + be_.kv_unowned_tokens() + hit.idle_pages * kKvPageTokens > limit_)
        break;  // FIFO: later ones wait too
      reserved_ += e.kv_need;
      share_prompt(e);
      HOGWILD_CHECK(e.kv_hit == hit.tokens);
    }
    active_.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
}

std::pair<SessionId, int64_t> Engine::prefix_leader(const Entry& e, int64_t cached) const {
  if (!opt_.prefix_cache) return {0, 0};
  const std::vector<int32_t>& p = e.request.prompt;
  const size_t shareable = p.size() - 1;  // the last prompt token is always fed
  std::pair<SessionId, int64_t> best{0, cached};
  // A session that waits itself may lead: the choices of a request whose common pages beyond
  // another request's are not cached yet wait for the first of them, which prefills them once.
  for (const auto& a : active_) {
    if (!a->session->prefilling()) continue;
    const std::vector<int32_t>& q = a->request.prompt;
    const size_t n = std::min(shareable, q.size());
    const auto common = std::mismatch(p.begin(), p.begin() + n, q.begin()).first - p.begin();
    const int64_t pages = common / kKvPageTokens * kKvPageTokens;
    if (pages > best.second) best = {a->id, pages};
  }
  return best.first != 0 ? best : std::pair<SessionId, int64_t>{0, 0};
}

void Engine::share_prompt(Entry& e) {
  e.kv_hit = e.session->share_prompt();
  if (opt_.prefix_cache) {
    stats_.prefix_query_tokens += static_cast<int64_t>(e.request.prompt.size());
    stats_.prefix_hit_tokens += e.kv_hit;
  }
  reserved_ -= e.kv_hit;
}

void Engine::share_awaited() {
  for (auto& a : active_) {
    Entry& e = *a;
    if (e.leader == 0 || e.session->finished()) continue;
    const auto leader = std::find_if(active_.begin(), active_.end(),
                                     [&](const auto& l) { return l->id == e.leader; });
    if (leader != active_.end() && (*leader)->session->prefilling() &&
        e.session->cached_prompt().tokens < e.awaited)
      continue;
    e.leader = 0;
    share_prompt(e);
  }
}

void Engine::finish(Entry& e) {
  e.session->release();
  reserved_ -= e.kv_need - e.kv_hit;
}

void Engine::cancel(SessionId id) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it)
    if ((*it)->id == id) {
      (*it)->session->cancel();
      done_[id] = std::move(*it);
      queue_.erase(it);
      return;
    }
  for (auto it = active_.begin(); it != active_.end(); ++it)
    if ((*it)->id == id) {
      (*it)->session->cancel();
      finish(**it);
      done_[id] = std::move(*it);
      active_.erase(it);
      return;
    }
}

void Engine::add_note(SessionId id, const std::string& author, const std::string& text) {
  for (auto& e : active_)
    if (e->id == id) return e->session->add_note(author, text);
  for (auto& e : queue_)
    if (e->id == id) return e->session->add_note(author, text);
  if (done_.count(id)) fail("session {} has finished; a note can no longer reach it", id);
  fail("no session {} in this engine", id);
}

std::vector<SessionEvent> Engine::step() {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<SessionEvent> events;
  last_ = ForwardCounts{};
  admit();
  StepPlan p;
  p.steps.resize(active_.size());
  plan_step(p);
  if (!p.parts.empty()) run_step(p, events);
  retire_finished(events);
  stats_.step_seconds += since(t0);
  return events;
}

void Engine::fail_entry(Entry& e, const std::string& why) {
  e.error = why;
  e.session->cancel(StopReason::error);
}

void Engine::plan_step(StepPlan& p) {
  auto add = [&p](Entry& e, SessionStep& s) {
    p.planned.push_back(&e);
    p.parts.push_back(&s);
    p.tokens += static_cast<int64_t>(s.batch.tokens.size());
  };
  // Decoding and finishing sessions first: their rows are never held back.
  for (size_t i = 0; i < active_.size(); ++i) {
    Entry& e = *active_[i];
    if (e.session->prefilling() || e.session->finished()) continue;
    try {
      if (e.session->plan(p.steps[i], 0)) add(e, p.steps[i]);
    } catch (const Error& err) {
      fail_entry(e, err.what());
    }
  }
  // Prompt chunks in admission order, in what the forward has left (at least one chunk when
  // nothing else runs, so every step makes progress; a session waiting for its leader's pages
  // plans nothing, and its leader is before it).
  for (size_t i = 0; i < active_.size(); ++i) {
    Entry& e = *active_[i];
    if (!e.session->prefilling() || e.leader != 0) continue;
    int64_t room = std::min(opt_.prefill_chunk, opt_.max_batch_tokens - p.tokens);
    if (room <= 0 && p.parts.empty()) room = opt_.prefill_chunk;
    if (room <= 0) break;
    try {
      if (e.session->plan(p.steps[i], room)) {
        add(e, p.steps[i]);
        p.prefill_chunks += 1;
        stats_.prompt_tokens += p.steps[i].prompt_tokens;
      }
    } catch (const Error& err) {
      fail_entry(e, err.what());
    }
  }
}

void Engine::run_step(StepPlan& p, std::vector<SessionEvent>& events) {
  try {
    run_forward(be_, p.parts);
    last_ = {static_cast<int64_t>(p.parts.size()), p.prefill_chunks, p.tokens};
    stats_.steps += 1;
    stats_.forward_tokens += p.tokens;
    stats_.forward_seconds += p.parts.front()->forward_seconds;
    for (size_t k = 0; k < p.parts.size(); ++k) {
      Entry& e = *p.planned[k];
      try {
        SessionEvent ev{e.id, e.session->complete(*p.parts[k])};
        for (int n : ev.report.tokens) stats_.sampled_tokens += n;
        events.push_back(std::move(ev));
      } catch (const Error& err) {
        fail_entry(e, err.what());
      }
    }
  } catch (const Error& err) {
    // The merged forward failed (e.g. the cache is full): every session in it ends.
    for (Entry* e : p.planned) fail_entry(*e, err.what());
  }
}

void Engine::retire_finished(std::vector<SessionEvent>& events) {
  // Finished sessions leave and free their blocks.
  for (auto it = active_.begin(); it != active_.end();) {
    if ((*it)->session->finished()) {
      Entry& e = **it;
      if (!e.error.empty()) {
        SessionEvent ev;
        ev.id = e.id;
        ev.report.finished = true;
        ev.report.phase = StepReport::Phase::done;
        events.push_back(std::move(ev));
      }
      finish(e);
      const SessionId id = e.id;
      done_[id] = std::move(*it);
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
}

void Engine::run_until_idle() {
  while (!idle()) step();
}

bool Engine::finished(SessionId id) const { return done_.count(id) > 0; }

const SessionResult& Engine::result(SessionId id) const {
  if (auto it = done_.find(id); it != done_.end()) return it->second->session->result();
  for (auto& e : active_)
    if (e->id == id) return e->session->result();
  for (auto& e : queue_)
    if (e->id == id) return e->session->result();
  fail("no session {} in this engine", id);
}

SessionResult Engine::take(SessionId id) {
  auto it = done_.find(id);
  if (it == done_.end()) fail("session {} has not finished (or was taken already)", id);
  SessionResult r = it->second->session->result();
  done_.erase(it);
  return r;
}

const Session* Engine::session(SessionId id) const {
  if (auto it = done_.find(id); it != done_.end()) return it->second->session.get();
  for (auto& e : active_)
    if (e->id == id) return e->session.get();
  for (auto& e : queue_)
    if (e->id == id) return e->session.get();
  return nullptr;
}

std::string Engine::error(SessionId id) const {
  if (auto it = done_.find(id); it != done_.end()) return it->second->error;
  return "";
}

}  // namespace hogwild
