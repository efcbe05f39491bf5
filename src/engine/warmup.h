// Warming a backend up before a server's first request (docs/SERVER.md "Warm-up"). The first
// forward of each shape costs far more than the later ones where the backend captures it (the
// CUDA backend records a CUDA graph per shape of up to Backend::warmup_tokens tokens; its kernels
// load on first launch), so a server that starts cold makes its first clients wait for every new
// batch size the load brings (vLLM captures its graphs at start-up for the same reason). The
// warm-up runs plain sessions of a short prompt on an engine of its own, 1, 2, ..., max_sessions
// at once, so that every decode batch of up to max_sessions rows has run once; then nothing of it
// is left in the cache.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine.h"
#include "hogwild/codec.h"
#include "kv/backend.h"

namespace hogwild {

/// What warm_up ran.
struct WarmupReport {
  int64_t sessions = 0;  // plain sessions run
  int64_t forwards = 0;  // forwards they took
  double seconds = 0.0;  // wall time
};

/// Runs rounds r = 1..max_sessions of r plain sessions at once, each `prompt` (token ids, not
/// empty, within the vocabulary) then `decode_tokens` >= 2 drawn tokens (end-of-sequence ids
/// ignored, temperature 1: the sampling path a server takes), on an Engine of its own over
/// `backend` without the prefix cache. The rounds' forwards are the decode batches of 1 to
/// max_sessions rows (and their prefills). On return every block the warm-up made is freed.
/// Throws hogwild::Error when a session fails (the engine's message) or max_sessions < 1.
/// PRECONDITION: nothing else uses the backend meanwhile.
WarmupReport warm_up(Backend& backend, const TextCodec& codec, const std::vector<int32_t>& prompt,
                     int64_t max_sessions, int64_t decode_tokens = 3);

}  // namespace hogwild
