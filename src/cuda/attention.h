// The hogwild attention kernel (docs/ARCHITECTURE.md §2): one serial step, every worker's query
// tokens against every block occurrence in its view, through the paged KV pool.
//
// Work decomposition (flash-decoding with sharing across workers):
// - A *pair* = (query row t, block occurrence at offset o in t's writer's view) with
//   limit = p_t - o >= 0: the query sees block keys j <= limit, and is rotated by limit
//   (q(p - o) . k(j) = q(p) . k(o + j)), scaled by the model's attention factor.
// - An *item* = one chunk [key_start, key_end) of one cache block and up to 64 / G pairs that see
//   it (G = num_attention_heads / num_key_value_heads). A CTA runs an item for a KV head: it loads
//   each K/V tile of the chunk once and applies it to all pairs x G query heads (<= 64 rows), so a
//   block seen by W workers is read once per step for all of them. Long blocks are split into
//   chunks (split-K) so the grid fills the GPU. Chunks are cut at the block's forgotten ranges (the
//   KV budget's gaps): no item covers a forgotten key (AttnItem::key_from).
// - A *unit* = the work of one CTA: KV heads [kv_head, kv_head + kv_heads) of one item. A chunk of
//   several tiles gets one unit per KV head. An item of one tile (a worker's step) whose rows fill
//   r16 of the CTA's 4 row tiles puts up to 4 / r16 KV heads in one unit, each head's tile in its
//   own ring stage: a short item costs a CTA's fixed latency once for several heads instead of
//   once per head.
// - Each (item, pair) is an *entry*: it writes a partial state {o, m, d} per query head
//   (o un-normalised (head_dim) fp32, m = running max in log2 units, i.e. of s * log2(e),
//   d = sum 2^(s*log2 e - m)). The combine kernel merges a row's entries by log-sum-exp; an empty
//   state (m = -inf, d = 0) has weight 0. The cache and plan are passed as explicit index arrays
//   (CSR), nothing global; counts are read from device memory so a CUDA graph can replay the
//   launch while the plan changes (grid sizes are upper bounds).
// - Both kernels read the plan before pdl_wait (it is uploaded before the graph), and the partial
//   kernel also the K/V tiles that end before its item's fresh_from, so those loads overlap the
//   previous kernel (pdl.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kv_layout.h"
#include "cuda/rope.h"

namespace hogwild::cuda {

inline constexpr int kAttnMaxRows = 64;  // query rows (pairs x G) per item
/// With the fused append (AttnAppend), an item's keys from fresh_from on must lie in its first
/// kAttnFreshTiles tiles of kPageTokens keys (PlanInput::split_fresh arranges it).
inline constexpr int kAttnFreshTiles = 3;

struct AttnItem {
  int32_t page_base;    // index into pages[] of the block's page 0
  int32_t key_start;    // first key (block-local), a multiple of kPageTokens
  int32_t key_end;      // one past the last key any pair of the item can see
  int32_t key_from;     // first key the item attends to (key_start <= key_from < key_end): keys
                        // of its first tile below it are forgotten (a gap of the block, Backend::
                        // forget_tokens) or belong to another item; masked like keys past a limit
  int32_t pair_start;   // pairs[pair_start .. + pair_count)
  int32_t pair_count;   // <= kAttnMaxRows / G
  int32_t entry_start;  // entry of pair k = entry_start + k
  int32_t fresh_from;   // first block-local key the kernels before this launch may still be
                        // writing (this forward's appends); tiles ending before it are loaded
                        // before the previous kernel completes (programmatic launch, pdl.h)
  int32_t fresh_row;    // batch token whose key is block key fresh_from (key j: token
                        // fresh_row + j - fresh_from); -1 when the block gains no key
};
inline constexpr int kAttnItemInts = static_cast<int>(sizeof(AttnItem) / 4);

/// KV heads one CTA may run for an item of one tile (its row tiles, and its K/V ring stages).
inline constexpr int kAttnMaxUnitHeads = 4;

/// A CTA's work. It carries a copy of its item and the page ids of the item's first tiles, so a
/// CTA's first loads (K/V tiles, pairs) depend on one read of the plan instead of a chain of three
/// (unit, item, page): every CTA's start, and so the short units at the end of the launch, waits on
/// that chain.
struct AttnUnit {
  AttnItem it;       // items[item]
  int32_t item;      // index into items[]
  int16_t kv_head;   // first KV head
  int16_t kv_heads;  // 1, or up to kAttnMaxUnitHeads when the item is one tile and its rows
                     // (pairs x G, in 16-row tiles) fit kv_heads times in kAttnMaxRows
  int32_t page[kAttnFreshTiles];  // page ids of the item's tiles 0, 1, 2 (the partial kernel's
                                  // prologue); 0 past its last tile
};
inline constexpr int kAttnUnitInts = static_cast<int>(sizeof(AttnUnit) / 4);
static_assert(sizeof(AttnUnit) == sizeof(AttnItem) + 8 + 4 * kAttnFreshTiles);

struct AttnPair {
  int32_t row;    // query row (token index in the batch)
  int32_t limit;  // p - o: last visible block-local key, and the query's rotation
};

/// Device-side plan of one attention launch (built by attention_plan.h, uploaded by the backend).
struct AttnPlanView {
  const AttnItem* items = nullptr;
  const AttnUnit* units = nullptr;   // one per CTA, in launch order
  const int32_t* n_units = nullptr;  // device scalar; grid.x = max_units >= *n_units
  int32_t max_units = 0;
  const int32_t* pages = nullptr;  // page ids of the blocks, per block contiguous
  const AttnPair* pairs = nullptr;
  const int32_t* row_entry_ptr = nullptr;  // (n_rows + 1) CSR over row_entries
  const int32_t* row_entries = nullptr;
  int32_t row_begin = 0;      // this launch combines rows [row_begin, row_begin + n_rows)
  int32_t n_rows = 0;         // (a large batch is split into several launches)
  int32_t max_entries = 0;    // capacity of part_o / part_ml
  float* part_o = nullptr;    // (max_entries, num_attention_heads, head_dim)
  float2* part_ml = nullptr;  // (max_entries, num_attention_heads) {m, d}
  // Not null: the combine kernel also writes each of its rows' log-sum-exp of the scores, in log2
  // units (log2 of sum_j 2^(s_j log2 e), s_j = q.k_j * scale), at lse[row * num_attention_heads +
  // head] (rows batch-global), for the attention scores of attention_scores.h.
  float* lse = nullptr;
};

struct AttnShape {
  int32_t num_attention_heads = 0;
  int32_t num_key_value_heads = 0;
  int32_t head_dim = 0;        // 64 or 128
  int64_t q_token_stride = 0;  // elements between tokens' q (fused qkv row length)
  float scale = 0.0f;          // softmax scale, usually 1/sqrt(head_dim)
  float attn_factor = 1.0f;    // RoPE attention factor applied to rotated queries
};

/// The K/V append of this forward fused into the attention (decode steps): instead of reading
/// this forward's keys from the pool (written by qk_norm_kv_append / kv_append, rope.h), every CTA
/// whose tile holds one computes it from the fused qkv rows (k-norm, RoPE at its block-local
/// position with the attention factor, bf16) and also writes it and its V into the pool; the
/// queries get their q-norm as they are loaded. Same arithmetic as those kernels (Qwen3
/// modeling_qwen3.py Qwen3Attention: norm before RoPE). Needs AttnItem::fresh_row on every item
/// and a plan built with PlanInput::split_fresh (kAttnFreshTiles).
struct AttnAppend {
  __nv_bfloat16* pool = nullptr;       // the layer's KV region (same as layer_pool), written
  const __nv_bfloat16* w_q = nullptr;  // q_norm weight (head_dim), null: no q/k norm (Qwen2)
  const __nv_bfloat16* w_k = nullptr;  // k_norm weight (head_dim), null iff w_q is
  float eps = 0.0f;                    // rms_norm_eps
  int64_t k_col = 0;                   // column of K head 0 in a qkv row; V head 0 at v_col
  int64_t v_col = 0;
};

/// out (n_rows, num_attention_heads * head_dim) bf16 = attention of q (heads at
/// q[t * q_token_stride + hq * head_dim], bf16, un-rotated, after q-norm) over the plan's blocks
/// in one layer's KV region `layer_pool`. Two launches: partials, then combine. With `append`,
/// q is before q-norm and the keys from each item's fresh_from on are computed from q's rows
/// (AttnAppend) instead of read.
/// PRECONDITION: head_dim in {64, 128}; G = heads / kv_heads <= 64; layout.head_dim == head_dim.
void hogwild_attention(const __nv_bfloat16* q, const AttnShape& shape,
                       const __nv_bfloat16* layer_pool, const KvLayout& layout,
                       const RopeTableView& rope, const AttnPlanView& plan, __nv_bfloat16* out,
                       cudaStream_t stream, const AttnAppend* append = nullptr);

}  // namespace hogwild::cuda
