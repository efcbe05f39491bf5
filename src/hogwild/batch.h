// One forward for the steps of one or more sessions (docs/ARCHITECTURE.md, "Engine step"): the
// sessions' parts (SessionStep, session.h) are concatenated into one ForwardBatch, the backend runs
// it once, and each part gets back its rows' logits or drawn tokens.
//
// Merging: views are appended part after part and every token's writer index is shifted by the
// number of views before its part; block ids are global to the backend, so the tokens keep them.
// The logits rows of a part are contiguous (its tokens are), in its own batch order.
// Sampling: when no part needs host logits, the forward draws every row (ForwardBatch::draw; each
// part's forbidden ids as one banned set); otherwise the forward brings every row to the host, the
// parts that need them get their logits, and the others' rows are drawn on the host with the same
// contract (sampling/row_draw.h) — on the CPU backend this is the same computation either way.
#pragma once

#include <span>

#include "hogwild/session.h"
#include "kv/backend.h"

namespace hogwild {

/// Runs one forward for every part in `steps` (each filled by Session::plan; parts with no
/// tokens are skipped) and fills each part's logits (host_logits parts: (rows, vocab_size) fp32)
/// or drawn tokens, and forward_seconds (the merged forward's wall time, the same for every
/// part). Throws hogwild::Error from the backend (invalid batch, cache full, nothing to draw).
void run_forward(Backend& backend, std::span<SessionStep*> steps);

}  // namespace hogwild
