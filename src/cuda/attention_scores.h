// Attention scores of the KV budget (Backend::attention_scores; docs/ARCHITECTURE.md "Bounded
// shared memory", docs/CUDA.md): for the keys of the blocks a forward names in
// ForwardBatch::score_blocks, the largest softmax weight any query row and query head gave each
// key, over every layer. A second pass after each layer's attention: the attention's combine
// kernel leaves every row's log-sum-exp (AttnPlanView::lse), and this kernel recomputes q.k for the
// scored keys and takes 2^(s log2 e - lse), the key's exact softmax weight in that row and head.
//
// Work decomposition: a *score tile* = keys [key_from, key_end) of one 64-key page of a scored
// block (a page cut at the block's gaps gives several tiles) and the pairs (row, limit) of every
// occurrence of the block in a row's writer's view that sees its first key (pairs sorted by
// limit, largest first, so a tile's pairs are a prefix of the block's). A CTA runs a tile for one
// KV head: it holds the tile's keys in shared memory and, for each pair and each of the G query
// heads of that KV head, rotates the query by the pair's limit (as the partial kernel does) and
// dots it with every key. Counts are read from device memory, as the attention plan's, so a CUDA
// graph replays the launch while the plan changes (the grid is an upper bound).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention.h"
#include "cuda/kv_layout.h"
#include "cuda/rope.h"

namespace hogwild::cuda {

struct ScoreTile {
  int32_t page;        // page id of the block's keys [key_start, key_start + kPageTokens)
  int32_t key_start;   // block-local, a multiple of kPageTokens
  int32_t key_from;    // first key scored (>= key_start; below it: a gap or another tile)
  int32_t key_end;     // one past the last key any pair sees (<= key_start + kPageTokens)
  int32_t out;         // index in ScorePlanView::scores of the block's key 0
  int32_t pair_start;  // pairs[pair_start .. + pair_count): every pair with limit >= key_from
  int32_t pair_count;
  int32_t pad = 0;
};
inline constexpr int kScoreTileInts = static_cast<int>(sizeof(ScoreTile) / 4);

/// Device-side plan of one forward's attention scores (uploaded by the backend).
struct ScorePlanView {
  const ScoreTile* tiles = nullptr;
  const int32_t* n_tiles = nullptr;  // device scalar; grid.x = max_tiles >= *n_tiles
  int32_t max_tiles = 0;
  const AttnPair* pairs = nullptr;  // (row, limit), row batch-global
  const float* lse = nullptr;       // (rows, num_attention_heads), AttnPlanView::lse
  // (scored keys) fp32, the max so far; zeroed by the caller before the forward's first layer,
  // every layer's launch raises it.
  float* scores = nullptr;
};

/// One layer's scores: for every tile, KV head kh, pair (row t, limit) and query head hq of kh
/// (hq / G = kh), every key j of the tile with key_from <= j < key_end and j <= limit:
/// scores[out + j] = max(scores[out + j], 2^(s log2 e - lse[t, hq])) with s = scale q_t,hq(limit).
/// k_j, the query rotated by limit with the attention factor and rounded to bf16 as the partial
/// kernel rounds it. q as hogwild_attention takes it (shape.q_token_stride); q_norm not null: q is
/// before its Qwen3 q-norm (the fused append's input, AttnAppend::w_q) and is normalised first,
/// with eps. Keys from the layer's KV region `layer_pool`. Launch after the layer's attention
/// (it reads the lse the combine kernel wrote).
/// PRECONDITION: head_dim in {64, 128}; as hogwild_attention.
void layer_attention_scores(const __nv_bfloat16* q, const AttnShape& shape,
                            const __nv_bfloat16* layer_pool, const KvLayout& layout,
                            const RopeTableView& rope, const __nv_bfloat16* q_norm, float eps,
                            const ScorePlanView& plan, cudaStream_t stream);

}  // namespace hogwild::cuda
