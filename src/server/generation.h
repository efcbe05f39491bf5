// What the server's engine thread drives: sessions submitted with an observer, stepped together,
// cancelled, steered, and collected when finished. The calls mirror the engine API of
// src/engine/engine.h (Engine::submit / cancel / step / finished / result; docs/SERVER.md
// "Engine") so that the server runs on that Engine with a small change; SequentialEngine
// (sequential_engine.h) implements it today by running hogwild::Session one at a time.
//
// Not thread-safe: one thread (the server's engine thread) calls every method.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hogwild/formatting.h"
#include "hogwild/session.h"
#include "sampling/sampler.h"

namespace hogwild::server {

/// One session to run: the prompt's token ids (chat template and formatting already applied),
/// the formatting that shapes the collaboration ("plain" for a plain completion), the session's
/// options (workers, layout, budget, collab_every, max_context, max_tokens_per_worker, ...) and
/// the sampling parameters (seed = base seed; worker w draws with seed + w).
struct GenerationRequest {
  std::vector<int32_t> prompt;
  Formatting formatting;
  SessionOptions options;
  SamplingParams sampling;
};

using SessionId = int64_t;

/// SessionObserver plus the events of live steering.
class GenerationObserver : public SessionObserver {
 public:
  /// A user note went into the shared history right before serial step `serial_step`; `text` is
  /// the text as inserted (note_text()). serial_step -1: the note was dropped (it did not fit the
  /// context, or the session ended before its next serial step).
  virtual void on_note(const std::string& text, int64_t serial_step) {}
};

/// Cache use, for /metrics.
struct CacheStats {
  int64_t blocks = 0;  // live cache blocks
  int64_t tokens = 0;  // tokens held by them
};

class GenerationEngine {
 public:
  virtual ~GenerationEngine() = default;
  /// Queues a session; obs (may be null) receives its events on the thread that calls step().
  /// Throws hogwild::Error when the request is invalid or can never run (bad options, sampling
  /// parameters out of range). PRECONDITION: obs outlives the session.
  virtual SessionId submit(GenerationRequest req, GenerationObserver* obs) = 0;
  /// Stops a session: a queued one finishes at once, a running one after its current serial step
  /// (stop_reason "interrupted", no finisher). Unknown or finished ids are ignored.
  virtual void cancel(SessionId id) = 0;
  /// Live steering: the note `text` goes into the session's shared history as a step of its own,
  /// between serial steps (before the next one); every worker sees it from that step on. Throws
  /// hogwild::Error when the session is unknown or finished.
  virtual void insert_note(SessionId id, const std::string& text) = 0;
  /// Advances the sessions (at least one serial step of one session); false when there was
  /// nothing to do.
  virtual bool step() = 0;
  virtual bool finished(SessionId id) const = 0;
  /// The result of a finished session (then forgotten). Throws hogwild::Error when the session
  /// failed (the message says why) or is not finished.
  virtual SessionResult take_result(SessionId id) = 0;
  virtual CacheStats cache_stats() const = 0;
};

}  // namespace hogwild::server
