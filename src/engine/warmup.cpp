#include "engine/warmup.h"

#include <chrono>

#include "core/error.h"
#include "engine/plain.h"

namespace hogwild {

WarmupReport warm_up(Backend& backend, const TextCodec& codec, const std::vector<int32_t>& prompt,
                     int64_t max_sessions, int64_t decode_tokens) {
  if (max_sessions < 1) fail("warm-up: max_sessions must be >= 1, got {}", max_sessions);
  if (decode_tokens < 2)
    fail("warm-up: decode_tokens must be >= 2 (a decode forward runs from the second), got {}",
         decode_tokens);
  const auto t0 = std::chrono::steady_clock::now();
  EngineOptions eo;
  eo.max_sessions = max_sessions;
  eo.prefix_cache = false;  // nothing of the warm-up stays cached
  Engine engine(backend, codec, eo);
  WarmupReport rep;
  const int64_t steps_before = engine.stats().steps;
  for (int64_t r = 1; r <= max_sessions; ++r) {
    std::vector<SessionId> ids;
    for (int64_t i = 0; i < r; ++i) {
      PlainRequest p;
      p.prompt = prompt;
      p.max_tokens = decode_tokens;
      p.ignore_eos = true;  // every session runs all its tokens: the round's rows stay together
      p.sampling.do_sample = true;
      p.sampling.seed = static_cast<uint64_t>(rep.sessions + i);
      ids.push_back(engine.submit(make_plain_request(backend.config(), std::move(p))));
    }
    engine.run_until_idle();
    for (SessionId id : ids) {
      const std::string error = engine.error(id);
      if (!error.empty()) fail("warm-up: a session of {} at once failed: {}", r, error);
      engine.take(id);
    }
    rep.sessions += r;
  }
  rep.forwards = engine.stats().steps - steps_before;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace hogwild
