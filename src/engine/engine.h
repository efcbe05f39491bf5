// The engine: runs many sessions together over one backend and its one KV pool
// (docs/ARCHITECTURE.md, "Engine").
//
// Each engine step gathers the next part of every active session (Session::plan) into ONE
// forward (hogwild/batch.h run_forward): every worker's decode rows, finisher rows, and chunks of
// new sessions' prompts (chunked prefill: a long prompt is fed a chunk per step beside the others'
// decode rows, so admitting a request never stalls the running ones for a whole prompt). Sessions
// join and leave between steps; each has its own formatting, layout, worker count, budget,
// sampling settings, seed and forbidden tokens.
//
// Memory: a session is admitted when the KV it can fill (Session::kv_tokens_needed) fits beside
// what the admitted sessions reserve; otherwise it waits in a bounded FIFO queue. A session that
// can never fit is refused at submit with the sizes. A finished or cancelled session frees its
// blocks at once.
//
// Prefix sharing (EngineOptions::prefix_cache, docs/ARCHITECTURE.md §2 "Prefix sharing"): when it
// admits a session, the engine starts its history block with the cached pages of its prompt
// (Session::share_prompt) and reserves only what the session can still take: its need minus the
// shared tokens. Shared pages that no reservation covers any more (their first session ended, or
// they came back from the idle cache: Backend::kv_unowned_tokens) count beside the reservations,
// so the pages in use never pass what admission allowed: a session's own pages stay within its
// reservation, and a page its first session leaves behind was within that session's.
// Sessions admitted together (the n choices of one request, or requests with the same system
// prompt) prefill their common pages once: a session whose prompt begins with whole pages that
// an admitted session still prefilling (its leader, which may itself be waiting for a leader)
// will cache, beyond those cached now, is admitted but waits, planning nothing, until the cache
// holds them or the leader's prefill has ended; it then shares them and prefills the rest. It
// reserves its whole need while it waits and gives back the shared tokens when it shares them.
//
// Determinism: a session's result does not depend on the other sessions in its forwards when
// the backend computes each row independently of the batch (the CPU backend: identical tokens).
// On CUDA, bf16 GEMMs of different batch shapes may round differently, so a sampled run beside
// others can diverge from the same run alone after a near tie (docs/ARCHITECTURE.md).
//
// Not thread-safe: one thread calls submit/cancel/step (a server hands requests to that thread).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/request.h"
#include "hogwild/codec.h"
#include "hogwild/session.h"
#include "kv/backend.h"

namespace hogwild {

using SessionId = int64_t;

struct EngineOptions {
  int64_t max_sessions = 64;        // sessions running at once
  int64_t max_queue = 1024;         // sessions waiting for memory or a slot; submit throws beyond
  int64_t max_batch_tokens = 2048;  // tokens of one forward (decode rows + prompt chunks)
  int64_t prefill_chunk = 512;      // most prompt tokens of one session in one forward
  int64_t kv_tokens =
      0;  // KV pool the engine may fill; 0 = Backend::kv_capacity_tokens (0 = no limit)
  // Automatic prefix caching: sessions whose prompts begin with the same pages share their K/V
  // (a prompt's pages are cached once computed; a new session's prefill skips the cached ones).
  // Exact on the CPU backend (the same K/V bits); on CUDA within bf16 tolerance, as sessions
  // sharing forwards (docs/ARCHITECTURE.md §7). false: every session prefills its whole prompt.
  bool prefix_cache = true;
};

/// What happened to one session in an engine step.
struct SessionEvent {
  SessionId id = 0;
  StepReport report;
};

/// Totals over the engine's life, for benchmarks and /metrics.
struct EngineStats {
  int64_t steps = 0;           // forwards run
  int64_t forward_tokens = 0;  // tokens fed, all sessions
  int64_t sampled_tokens = 0;  // tokens sampled by workers
  int64_t prompt_tokens = 0;   // prompt tokens prefilled
  // Prefix cache (EngineOptions::prefix_cache), over the sessions admitted with it on, counted
  // when a session shares (at admission, or when a waiting one stops waiting): prompt tokens
  // looked up (whole prompts) and of them the tokens shared from the cache (not prefilled). The
  // hit rate is prefix_hit_tokens / prefix_query_tokens.
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  double forward_seconds = 0;  // time inside the forwards
  double step_seconds = 0;     // time inside step() (planning, forwards, completion, observers)
};

/// What the last engine step put into its forward (all 0 when it ran none).
struct ForwardCounts {
  int64_t sessions = 0;        // sessions with a part in the forward (decode, finisher or prefill)
  int64_t prefill_chunks = 0;  // of them, sessions fed a chunk of their prompt
  int64_t tokens = 0;          // tokens fed, all sessions
};

class Engine {
 public:
  /// backend and codec outlive the engine; the engine is the only user of the backend's cache.
  Engine(Backend& backend, const TextCodec& codec, EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Queues a session. Throws hogwild::Error for bad options (Session's checks), a prompt that
  /// leaves no room in the context, a session that can never fit the KV pool (with the sizes),
  /// or a full queue.
  SessionId submit(SessionRequest request);
  /// Stops a session between steps (no finisher; stop_reason "cancelled") and frees its blocks;
  /// a queued one leaves the queue. Unknown or finished ids are ignored.
  void cancel(SessionId id);
  /// Live steering: queues a person's note for the session's shared history (Session::add_note);
  /// every worker reads it from the serial step after the next. Throws hogwild::Error for an
  /// unknown or finished session or an empty note.
  void add_note(SessionId id, const std::string& author, const std::string& text);
  /// One forward over every active session (admitting waiting ones first). Returns the events of
  /// this step (empty when there was nothing to run). A session whose step throws (e.g. the
  /// cache is full) ends with stop_reason "error" and error(id) set; the others go on.
  std::vector<SessionEvent> step();
  /// Steps until no session is active or waiting.
  void run_until_idle();

  bool idle() const { return active_.empty() && queue_.empty(); }
  /// Admitted sessions, those waiting for another's prompt pages included.
  int64_t active_sessions() const { return static_cast<int64_t>(active_.size()); }
  int64_t queued_sessions() const { return static_cast<int64_t>(queue_.size()); }
  /// True once the session has ended (answer, budget, cancel, error, ...).
  bool finished(SessionId id) const;
  /// The session's result once finished (or its state so far); throws for an unknown id.
  const SessionResult& result(SessionId id) const;
  /// Moves a finished session's result out and forgets the session.
  SessionResult take(SessionId id);
  /// The session object (for observers that read its blocks, e.g. the view dump); null once taken.
  const Session* session(SessionId id) const;
  /// The error that ended the session ("" when none).
  std::string error(SessionId id) const;
  /// KV tokens reserved by the active sessions (each its need minus its shared prompt tokens)
  /// plus the shared pages no reservation covers (Backend::kv_unowned_tokens), and the pool size
  /// (0 = no limit).
  int64_t kv_reserved() const { return reserved_ + be_.kv_unowned_tokens(); }
  int64_t kv_limit() const { return limit_; }
  const EngineStats& stats() const { return stats_; }
  /// The forward of the last step() (for /metrics: how many sessions share a forward).
  const ForwardCounts& last_forward() const { return last_; }
  Backend& backend() { return be_; }

 private:
  struct Entry {
    SessionId id = 0;
    SessionRequest request;
    std::unique_ptr<Session> session;
    int64_t kv_need = 0;  // Session::kv_tokens_needed
    int64_t kv_hit = 0;   // prompt tokens shared from the prefix cache (Session::share_prompt)
    // Prefix sharing among sessions admitted together: the session still prefilling whose prompt
    // pages this one waits for (0 = none: its blocks exist), and the prompt tokens it then
    // expects to share.
    SessionId leader = 0;
    int64_t awaited = 0;
    std::string error;
  };
  // One step's forward as planned: the sessions in it and their parts, in the same order.
  struct StepPlan {
    std::vector<Entry*> planned;
    std::vector<SessionStep> steps;  // (active sessions) each one's part when it is planned
    std::vector<SessionStep*> parts;
    int64_t tokens = 0, prefill_chunks = 0;  // rows of the forward; prompt chunks among them
  };
  void admit();
  // The admitted session still prefilling (or waiting for its own leader) whose prompt shares
  // the most whole pages with e's (below e's last prompt token), and those pages in tokens;
  // {0, 0} when none shares more than `cached` tokens (what the cache already holds of e's
  // prompt).
  std::pair<SessionId, int64_t> prefix_leader(const Entry& e, int64_t cached) const;
  // Creates e's blocks, shares the cached pages of its prompt (Session::share_prompt) and lowers
  // its reservation by them; counts the lookup in stats_.
  void share_prompt(Entry& e);
  // The waiting sessions whose pages are cached now, or whose leader's prefill has ended, share
  // them (admission order).
  void share_awaited();
  void finish(Entry& e);
  // The steps of step(): plan every active session's part (decoding ones first, then prompt
  // chunks in what the forward leaves), run the forward and complete the sessions, move the
  // finished ones to done_. A session that throws hogwild::Error ends with that error.
  void plan_step(StepPlan& p);
  void run_step(StepPlan& p, std::vector<SessionEvent>& events);
  void retire_finished(std::vector<SessionEvent>& events);
  static void fail_entry(Entry& e, const std::string& why);

  Backend& be_;
  const TextCodec& codec_;
  EngineOptions opt_;
  int64_t limit_ = 0, reserved_ = 0;
  SessionId next_id_ = 1;
  std::deque<std::unique_ptr<Entry>> queue_;
  std::vector<std::unique_ptr<Entry>> active_;  // admission order
  std::map<SessionId, std::unique_ptr<Entry>> done_;
  EngineStats stats_;
  ForwardCounts last_;
};

}  // namespace hogwild
