// The host implementation of the per-row sampling contract (kv/backend.h RowSampling,
// ForwardBatch::draw): the row's banned ids to -inf, then the Sampler's processors in
// transformers' order (temperature -> top-k -> top-p -> min-p, sampling/sampler.h), then greedy
// argmax (lowest id among ties) or the inverse CDF in vocabulary order at the row's uniform u, in
// double. The CPU backend samples with it; the CUDA kernels (src/cuda/sampling.h) implement the
// same contract on the device and are tested against it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/backend.h"

namespace hogwild {

/// The token RowSampling `r` draws from one logits row (vocab_size fp32, copied), after setting
/// the `banned` ids to -inf (ids outside the vocabulary are ignored); -1 when nothing can be drawn
/// (every logit -inf or NaN).
int32_t draw_row(std::span<const float> logits, const RowSampling& r,
                 std::span<const int32_t> banned);

/// The checks of a forward's draw (ForwardBatch::draw), shared by every backend so that they
/// refuse the same inputs with the same message, before the forward changes the cache. Throws
/// hogwild::Error when draw.rows is not empty and its size differs from the number of
/// want_logits tokens, or a row is malformed (u outside [0, 1), NaN temperature, top_k < 0,
/// top_p <= 0, min_p outside [0, 1], banned set out of range). No rows: nothing to check.
void check_row_sampling(const ForwardBatch& batch);

/// The host draw of a forward (backends that sample on the host, after check_row_sampling and
/// the forward that filled out.logits with (rows, vocab_size) fp32): draw_row for every row of
/// batch.draw with its banned set into out.tokens; out.logits is then cleared unless
/// draw.keep_logits. No rows: out is left with its logits and no tokens. Throws hogwild::Error
/// when a row has nothing left to draw.
void draw_on_host(const ForwardBatch& batch, int64_t vocab_size, ForwardResult& out);

}  // namespace hogwild
