// How much KV cache a hogwild run can fill, decided before it starts: the engine admits a session
// only when this fits beside the others (engine/engine.h), so that a run never runs out of cache
// midway.
#pragma once

#include <cstdint>

#include "kv/backend.h"

namespace hogwild {

/// Tokens allowed for a worker's constant layout blocks (others' header, separator + own header;
/// formatting.h LayoutTexts) in the KV estimate.
inline constexpr int64_t kConstTokensPerWorker = 256;

struct KvNeed {
  int64_t prompt_tokens = 0;  // the prompt (+ history header), as tokenized
  int n_workers = 1;
  int64_t budget = 0;               // serial steps; 0 = until an answer (no bound from it)
  int64_t context = 0;              // the longest view allowed (--max-context or the model's
                                    // max_position_embeddings); 0 = unknown (no bound from it)
  int64_t finisher_max_tokens = 0;  // formatting finisher.max_tokens
  bool independent = false;         // layout independent: views do not hold each other, every
                                    // worker has its own output and finisher
  int64_t kv_budget = 0;            // SessionOptions::kv.budget (tokens); 0 = none
  int64_t step_tokens = 0;  // SessionOptions::kv.step_tokens: the longest step with a KV budget
  // Step openings (session.h "serial steps"): a worker whose step ended feeds the next step's
  // opening with the step's last token, and a step may end at every token it generates.
  int64_t opening_tokens = 0;  // the most tokens one opening feeds, collaboration question aside
  int64_t check_tokens = 0;    // the most tokens the collaboration question adds to an opening
  int64_t collab_every = 0;    // generated tokens between collaboration checks; 0 = none
  // Skeleton-of-Thought (independent layout): only the first worker opens steps in any serial
  // step (the answer's); every other one opens one expansion. once_tokens: the openings fed once
  // in the run (outline, answer, and every point's prefix with the point's text).
  bool skeleton = false;
  int64_t once_tokens = 0;
};

/// KV tokens the run may hold at once: the longest view (at most `context`; with a budget of B
/// serial steps, at most what every worker can feed in them), plus the finisher's tokens, one
/// partly filled page (kKvPageTokens) for each of the 3 * n_workers + 4 blocks that can be live
/// at once (history, current and closing steps, constants, finisher) and the constant blocks'
/// tokens. A worker feeds at most B x (1 + opening_tokens) tokens in B serial steps: the first
/// feeds its first opening, each later one its last token and, when that token ended a step (one
/// token can), the next opening; the collaboration questions add check_tokens each, at most one
/// per collab_every tokens generated (all workers counted; per worker in the independent layout),
/// ((B + 1) x n_workers / collab_every of them). This is a true bound however short the steps are;
/// with steps of L tokens a run fills about B x (1 + opening_tokens / L) per worker. In the
/// independent layout the views bound each worker's output separately: the prompt + n_workers x
/// (one output, at most the context less the prompt, + one finisher). Skeleton-of-Thought: the
/// first worker as above, the others B each, and once_tokens.
/// With a KV budget (combined or interleaved layout) the views term is at most what the session
/// holds at once (docs/ARCHITECTURE.md "Bounded shared memory"): the history's pages after each
/// serial step's forgetting (history_page_cap, forgetting.h) and one page more, plus each
/// worker's step twice (step_tokens: in its block, and copied into the history by the promotion
/// before the forgetting).
/// Never overflows (a huge budget or context saturates at INT64_MAX / 4 before the additions).
int64_t run_kv_tokens(const KvNeed& n);

}  // namespace hogwild
