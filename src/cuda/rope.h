// RoPE on the GPU: writing new keys/values into the paged cache (keys rotated at their block-local
// position, scaled once by the model's attention factor) and step promotion (keys rotated by the
// destination length: a pure rotation, docs/ARCHITECTURE.md §2, §4). Rotate-half pairing (i, i +
// r/2) over the first rotary_dim values of a head; the rest pass through. cos/sin come from a table
// (n_positions, rotary_dim / 2) of float2 {cos, sin}, copied from hogwild::cpu::RopeTable so both
// backends use the same float32 angles. CPU twin: hogwild::cpu::RopeTable::rotate (src/cpu/rope.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kv_layout.h"

namespace hogwild::cuda {

/// Rope table on the device: entry (pos, i) = {cos, sin} of pos * inv_freq[i].
struct RopeTableView {
  const float2* cos_sin = nullptr;  // (n_positions, rotary_dim / 2)
  int32_t n_positions = 0;
  int32_t rotary_dim = 0;  // even, <= head_dim
};

/// Appends n_tokens new tokens' K and V of one layer to the cache. Token t's K is the head vectors
/// qkv[t * token_stride + k_col + h * head_dim ..] (h < num_key_value_heads), its V at v_col.
/// K is rotated by pos[t] (block-local index) with cos/sin scaled by attn_factor, V copied;
/// both go to slot[t] of `layer_pool` (one layer's region, kv_layout.h). bf16 in and out, fp32
/// math. PRECONDITION: 0 <= pos[t] < rope.n_positions (device data: not checked).
void kv_append(const __nv_bfloat16* qkv, int64_t token_stride, int64_t k_col, int64_t v_col,
               int64_t n_tokens, const int32_t* pos, const int32_t* slot, __nv_bfloat16* layer_pool,
               const KvLayout& layout, const RopeTableView& rope, float attn_factor,
               cudaStream_t stream);

/// Qwen3 q/k norm fused with kv_append, for the fused qkv row layout [q (n_q heads) | k | v]: per
/// token, every q head is RMS-normalised in place with w_q and every K head with w_k (as
/// rmsnorm_qk_heads, eps added to the mean square), then the normalised K is rotated and appended
/// with V exactly as kv_append (k_col = n_q head_dim, v_col = (n_q + kv_heads) head_dim). One
/// launch instead of two. CPU twin: hogwild::cpu::rmsnorm per head, then RopeTable::rotate.
/// PRECONDITION: head_dim a multiple of 32, <= 1024; as kv_append.
void qk_norm_kv_append(__nv_bfloat16* qkv, int64_t token_stride, int64_t n_q, int64_t n_tokens,
                       const __nv_bfloat16* w_q, const __nv_bfloat16* w_k, float eps,
                       const int32_t* pos, const int32_t* slot, __nv_bfloat16* layer_pool,
                       const KvLayout& layout, const RopeTableView& rope, float attn_factor,
                       cudaStream_t stream);

/// Step promotion on every layer: for i < n_tokens, K at src_slot[i] rotated by `delta` (pure
/// rotation) is written to dst_slot[i]; V copied. pool = base of layer 0; n_layers layers.
/// PRECONDITION: 0 <= delta < rope.n_positions; src and dst slots disjoint.
void kv_promote(__nv_bfloat16* pool, const KvLayout& layout, int64_t n_layers,
                const int32_t* src_slot, const int32_t* dst_slot, int64_t n_tokens, int32_t delta,
                const RopeTableView& rope, cudaStream_t stream);

}  // namespace hogwild::cuda
