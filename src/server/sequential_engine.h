// GenerationEngine over today's hogwild::Session: sessions run one at a time, in submission
// order, each to its end inside one step() call. Between two serial steps of the running session
// (on every forward) it calls the `between_steps` hook, where the server's engine thread takes in
// new requests, cancels and notes, so a cancel or a note acts within one serial step although
// step() returns only when the session ends. Blocks are freed when a session ends
// (SteeringBackend). Replaced by src/engine's Engine, which steps every session in one forward.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "hogwild/codec.h"
#include "hogwild/picker.h"
#include "server/generation.h"
#include "server/steering_backend.h"

namespace hogwild::server {

/// The text of a user note as it goes into the shared history (a step of its own):
/// "**User note:** " + text + the formatting's step separator.
std::string note_text(const Formatting& f, const std::string& text);

class SequentialEngine : public GenerationEngine {
 public:
  /// PRECONDITION: backend and codec outlive the engine; nothing else uses the backend's cache.
  SequentialEngine(Backend& backend, const TextCodec& codec,
                   std::function<void()> between_steps = nullptr);
  ~SequentialEngine() override;

  SessionId submit(GenerationRequest req, GenerationObserver* obs) override;
  void cancel(SessionId id) override;
  void insert_note(SessionId id, const std::string& text) override;
  bool step() override;
  bool finished(SessionId id) const override;
  SessionResult take_result(SessionId id) override;
  CacheStats cache_stats() const override;

 private:
  struct Entry;
  class Relay;

  SteeringBackend backend_;
  const TextCodec& codec_;
  std::function<void()> between_steps_;
  SessionId next_id_ = 1;
  std::deque<SessionId> queue_;
  std::map<SessionId, std::unique_ptr<Entry>> entries_;
  SessionId running_ = 0;
};

}  // namespace hogwild::server
