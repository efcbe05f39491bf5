// How much KV cache a hogwild run can fill, decided before it starts: the engine admits a session
// only when this fits beside the others (engine/engine.h), so that a run never runs out of cache
// midway.
#pragma once

#include <cstdint>

#include "model/backend.h"

namespace hogwild {

/// Tokens allowed for a worker's constant layout blocks (others' header, separator + own header;
/// formatting.h LayoutTexts) in the KV estimate.
inline constexpr int64_t kConstTokensPerWorker = 256;
/// Step openings (prefix, collaboration question) a worker feeds beyond one token per serial
/// step, allowed per worker in the budget-bound estimate.
inline constexpr int64_t kOpeningTokensPerWorker = 64;

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
};

/// KV tokens the run may hold at once: the longest view (at most `context`; with a budget, at
/// most the prompt + every worker's budget and openings), plus the finisher's tokens, one partly
/// filled page (kKvPageTokens) for each of the 3 * n_workers + 4 blocks that can be live at once
/// (history, current and closing steps, constants, finisher) and the constant blocks' tokens. In
/// the independent layout the views bound each worker's output separately: the prompt + n_workers
/// x (one output + one finisher).
/// With a KV budget (combined or interleaved layout) the views term is at most what the session
/// holds at once (docs/ARCHITECTURE.md "Bounded shared memory"): the history's pages after each
/// serial step's forgetting (history_page_cap, forgetting.h) and one page more, plus each
/// worker's step twice (step_tokens: in its block, and copied into the history by the promotion
/// before the forgetting).
/// Never overflows (a huge budget or context saturates at INT64_MAX / 4 before the additions).
int64_t run_kv_tokens(const KvNeed& n);

}  // namespace hogwild
