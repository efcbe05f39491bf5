// GenerationEngine over the Engine of src/engine (many sessions in one forward, admission by KV
// memory, a bounded queue, cancel, notes; docs/SERVER.md "Engine thread").
#pragma once

#include "engine/engine.h"
#include "server/generation.h"

namespace hogwild::server {

class ServerEngine : public GenerationEngine {
 public:
  /// PRECONDITION: backend and codec outlive the engine; nothing else uses the backend's cache.
  ServerEngine(Backend& backend, const TextCodec& codec, EngineOptions options)
      : be_(backend), engine_(backend, codec, options) {}

  SessionId submit(GenerationRequest req, SessionObserver* obs) override;
  void cancel(SessionId id) override { engine_.cancel(id); }
  void insert_note(SessionId id, const std::string& author, const std::string& text) override {
    engine_.add_note(id, author, text);
  }
  bool step() override;
  ForwardCounts last_forward() const override { return engine_.last_forward(); }
  bool finished(SessionId id) const override { return engine_.finished(id); }
  SessionResult take_result(SessionId id) override;
  EngineGauges gauges() const override {
    return {be_.live_blocks(),
            be_.kv_used_tokens(),
            engine_.active_sessions(),
            engine_.queued_sessions(),
            engine_.kv_reserved(),
            engine_.kv_limit(),
            engine_.stats().prefix_query_tokens,
            engine_.stats().prefix_hit_tokens};
  }

 private:
  Backend& be_;
  Engine engine_;
};

}  // namespace hogwild::server
