// What the server's engine thread drives: sessions submitted with an observer, stepped together,
// cancelled, steered, and collected when finished (docs/SERVER.md "Engine thread"). The calls are
// those of src/engine/engine.h's Engine; ServerEngine (server_engine.h) is this over that Engine,
// and tests may put a scripted engine behind the same calls.
//
// Not thread-safe: one thread (the server's engine thread) calls every method.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "hogwild/formatting.h"
#include "hogwild/session.h"
#include "sampling/sampler.h"

namespace hogwild::server {

/// One session to run (engine/request.h SessionRequest without the picker and the observer, so
/// that it copies): the prompt's token ids (chat template and formatting already applied), the
/// formatting that shapes the collaboration ("plain" for a plain completion), the session's
/// options (workers, layout, budget, collab_every, max_context, max_tokens_per_worker, ...) and
/// the sampling parameters (seed = base seed; worker w draws with seed + w).
struct GenerationRequest {
  std::vector<int32_t> prompt;
  Formatting formatting;
  SessionOptions options;
  SamplingParams sampling;
};

using SessionId = int64_t;

/// The engine's state now, for /metrics.
struct EngineGauges {
  int64_t blocks = 0;           // live cache blocks
  int64_t tokens = 0;           // KV tokens held by them (Backend::kv_used_tokens)
  int64_t active_sessions = 0;  // sessions in the forwards
  int64_t queued_sessions = 0;  // sessions waiting for KV memory or a slot
  int64_t kv_reserved = 0;      // KV tokens reserved by the active sessions (what they can fill)
  int64_t kv_capacity = 0;      // KV tokens the engine may reserve (0 = no limit)
  // Prefix cache (EngineOptions::prefix_cache; counters since the engine started): prompt tokens
  // looked up, and of them the tokens shared from the cache (EngineStats).
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
};

class GenerationEngine {
 public:
  virtual ~GenerationEngine() = default;
  /// Queues a session; obs (may be null) receives its events on the thread that calls step().
  /// Throws hogwild::Error when the request is invalid or can never run (bad options, sampling
  /// parameters out of range, more KV than the pool holds, a full queue).
  /// PRECONDITION: obs outlives the session.
  virtual SessionId submit(GenerationRequest req, SessionObserver* obs) = 0;
  /// Stops a session between steps (stop_reason "cancelled", no finisher) and frees its cache.
  /// Unknown or finished ids are ignored. Not from inside an observer callback.
  virtual void cancel(SessionId id) = 0;
  /// Live steering: a note by `author` goes into the session's shared history as a finished step
  /// of its own at its next decode forward (SessionObserver::on_note tells which); every worker
  /// reads it from the serial step after that. Throws hogwild::Error when the session is unknown
  /// or finished, or the note is empty.
  virtual void insert_note(SessionId id, const std::string& author, const std::string& text) = 0;
  /// One forward over the active sessions; false when there was nothing to do.
  virtual bool step() = 0;
  /// What the last step() put into its forward (sessions, prompt chunks, tokens; all 0 when it
  /// ran none).
  virtual ForwardCounts last_forward() const = 0;
  virtual bool finished(SessionId id) const = 0;
  /// The result of a finished session (then forgotten). Throws hogwild::Error when the session
  /// failed (the message says why) or is not finished.
  virtual SessionResult take_result(SessionId id) = 0;
  virtual EngineGauges gauges() const = 0;
};

}  // namespace hogwild::server
