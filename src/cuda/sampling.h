// Token sampling on the GPU, one CTA per logits row, with transformers' processors in its order
// (as hogwild::Sampler, src/sampling/sampler.h): temperature -> top-k -> top-p -> min-p -> draw.
// Thresholds are exact and need no sort: top-k keeps s >= the k-th largest score (ties kept, as
// HF's `scores < topk[-1]` removal), found by a radix select over the order-preserving bit
// patterns (4 histogram passes); top-p the smallest top set whose probability is >= top_p (a
// bisection over the bit patterns, 32 halvings), min-p keeps p >= min_p * p_max. When the top-k
// survivors fit shared memory (2048), top-p, min-p and the draw run on them alone. The draw is the
// inverse CDF, in vocabulary order, of a uniform u given per row (the host's seeded RNG), so a CPU
// twin can reproduce it exactly. Banned tokens and the repetition penalty are applied to the logits
// before this (host side).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace hogwild::cuda {

struct SampleParams {
  float temperature = 1.0f;  // <= 0: greedy (argmax, lowest index among ties)
  int32_t top_k = 0;         // 0 = off
  float top_p = 1.0f;        // >= 1 = off
  float min_p = 0.0f;        // 0 = off
  float u = 0.0f;            // uniform draw in [0, 1)
  int32_t ban_begin = 0;     // this row's banned ids: ids[ban_begin, ban_begin + ban_count) of
  int32_t ban_count = 0;     // ban_tokens' array
};

/// out[r] = token drawn from row r of logits (n_rows, vocab_size) fp32 with params[r] (device).
/// Rows whose every logit is -inf give -1. PRECONDITION: vocab_size >= 1.
void sample_rows(const float* logits, const SampleParams* params, int32_t* out, int64_t n_rows,
                 int64_t vocab_size, cudaStream_t stream);

/// Sets logits[r][ids[i]] = -inf for every row r < n_rows and every i in row r's range
/// [params[r].ban_begin, + params[r].ban_count) of the device array ids; ids outside
/// [0, vocab_size) are ignored (as Sampler's banned_tokens).
void ban_tokens(float* logits, int64_t n_rows, int64_t vocab_size, const int32_t* ids,
                const SampleParams* params, cudaStream_t stream);

}  // namespace hogwild::cuda
