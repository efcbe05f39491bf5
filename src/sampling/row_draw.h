// The host implementation of the per-row sampling contract (model/backend.h RowSampling,
// Backend::forward_sample): the row's banned ids to -inf, then the Sampler's processors in
// transformers' order (temperature -> top-k -> top-p -> min-p, sampling/sampler.h), then greedy
// argmax (lowest id among ties) or the inverse CDF in vocabulary order at the row's uniform u, in
// double. The CPU backend samples with it; the CUDA kernels (src/cuda/sampling.h) implement the
// same contract on the device and are tested against it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/backend.h"

namespace hogwild {

/// The token RowSampling `r` draws from one logits row (vocab_size fp32, copied), after setting
/// the `banned` ids to -inf (ids outside the vocabulary are ignored); -1 when nothing can be drawn
/// (every logit -inf or NaN).
int32_t draw_row(std::span<const float> logits, const RowSampling& r,
                 std::span<const int32_t> banned);

/// Backend::forward_sample done on the host: backend.forward, then draw_row for every row with
/// its banned set (RowSampling::banned indexes banned_sets; -1 = none); `logits`, when not null,
/// receives the forward's rows. Throws hogwild::Error when
/// rows.size() differs from the number of want_logits tokens, a row is malformed (u outside
/// [0, 1), NaN temperature, top_k < 0, top_p <= 0, min_p outside [0, 1], banned set out of range),
/// or a row has nothing left to draw.
void forward_sample_on_host(Backend& backend, const ForwardBatch& batch,
                            const std::vector<std::vector<int32_t>>& banned_sets,
                            const std::vector<RowSampling>& rows, std::vector<int32_t>& tokens,
                            std::vector<float>* logits = nullptr);

/// The checks forward_sample applies to its arguments (see forward_sample_on_host); shared by
/// every backend so that they refuse the same inputs with the same message.
void check_row_sampling(const ForwardBatch& batch,
                        const std::vector<std::vector<int32_t>>& banned_sets,
                        const std::vector<RowSampling>& rows);

}  // namespace hogwild
