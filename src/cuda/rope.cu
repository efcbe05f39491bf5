// RoPE kernels (rope.h). Kernels first, launchers second.
#include "cuda/pdl.cuh"
#include "cuda/rope.h"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;

// Rotates the head vector x (head_dim, bf16) by table row `pos` with cos/sin scaled by `scale`;
// thread d produces element d. Returns the fp32 value.
__device__ __forceinline__ float rotated(const bf16* x, int d, const float2* row, int rot,
                                         float scale) {
  const int half = rot / 2;
  const float xd = __bfloat162float(x[d]);
  if (d >= rot) return xd;
  const int i = d < half ? d : d - half;
  const float2 cs = row[i];
  const float partner = __bfloat162float(x[d < half ? d + half : d - half]);
  // rotate_half(x) = [-x2, x1]
  const float rh = d < half ? -partner : partner;
  return (xd * cs.x + rh * cs.y) * scale;
}

// grid (n_tokens, kv_heads), block head_dim threads.
__global__ void kv_append_kernel(const bf16* qkv, int64_t token_stride, int64_t k_col,
                                 int64_t v_col, const int32_t* pos, const int32_t* slot, bf16* pool,
                                 KvLayout L, RopeTableView rope, float factor) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t t = blockIdx.x;
  const int h = blockIdx.y, d = threadIdx.x;
  const bf16* k = qkv + t * token_stride + k_col + int64_t(h) * L.head_dim;
  const bf16* v = qkv + t * token_stride + v_col + int64_t(h) * L.head_dim;
  const float2* row = rope.cos_sin + int64_t(pos[t]) * (rope.rotary_dim / 2);
  const float kr = rotated(k, d, row, rope.rotary_dim, factor);
  const int64_t s = slot[t];
  pool[L.slot_offset(s, 0, h) + d] = __float2bfloat16(kr);
  pool[L.slot_offset(s, 1, h) + d] = v[d];
}

// Qwen3 q/k norm + kv_append: grid (n_tokens, n_q + kv_heads), block head_dim threads. Block
// (t, hh) RMS-normalises head hh of token t in place (q heads first, then the K heads, adjacent
// columns of the fused qkv row); a K head is then rotated from shared memory and written to the
// cache with its V, as kv_append_kernel.
__global__ void qk_norm_kv_append_kernel(bf16* qkv, int64_t token_stride, int n_q, const bf16* w_q,
                                         const bf16* w_k, float eps, const int32_t* pos,
                                         const int32_t* slot, bf16* pool, KvLayout L,
                                         RopeTableView rope, float factor) {
  pdl_wait();
  pdl_launch_dependents();
  __shared__ float red[32];
  __shared__ bf16 kn[1024];
  const int64_t t = blockIdx.x;
  const int hh = blockIdx.y, d = threadIdx.x, hd = L.head_dim;
  const bool is_k = hh >= n_q;
  bf16* x = qkv + t * token_stride + int64_t(hh) * hd;
  const float v = __bfloat162float(x[d]);
  float ss = v * v;
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((d & 31) == 0) red[d >> 5] = ss;
  __syncthreads();
  ss = 0.0f;
  for (int w = 0; w < hd / 32; ++w) ss += red[w];
  const float r = rsqrtf(ss / float(hd) + eps);
  const bf16 y = __float2bfloat16(v * r * __bfloat162float((is_k ? w_k : w_q)[d]));
  x[d] = y;
  if (!is_k) return;  // uniform per block
  kn[d] = y;
  __syncthreads();
  const int h = hh - n_q;
  const float2* row = rope.cos_sin + int64_t(pos[t]) * (rope.rotary_dim / 2);
  const float kr = rotated(kn, d, row, rope.rotary_dim, factor);
  const int64_t s = slot[t];
  pool[L.slot_offset(s, 0, h) + d] = __float2bfloat16(kr);
  pool[L.slot_offset(s, 1, h) + d] =
      qkv[t * token_stride + int64_t(n_q + L.num_key_value_heads + h) * hd + d];
}

// grid (n_tokens, kv_heads, n_layers), block head_dim threads.
__global__ void kv_promote_kernel(bf16* pool, KvLayout L, const int32_t* src_slot,
                                  const int32_t* dst_slot, int32_t delta, RopeTableView rope) {
  const int64_t i = blockIdx.x;
  const int h = blockIdx.y, d = threadIdx.x;
  bf16* layer = pool + int64_t(blockIdx.z) * L.layer_elems();
  const bf16* k = layer + L.slot_offset(src_slot[i], 0, h);
  const float2* row = rope.cos_sin + int64_t(delta) * (rope.rotary_dim / 2);
  const float kr = rotated(k, d, row, rope.rotary_dim, 1.0f);
  const bf16 vv = layer[L.slot_offset(src_slot[i], 1, h) + d];
  layer[L.slot_offset(dst_slot[i], 0, h) + d] = __float2bfloat16(kr);
  layer[L.slot_offset(dst_slot[i], 1, h) + d] = vv;
}

void check_rope(const KvLayout& L, const RopeTableView& rope) {
  HOGWILD_CUDA_REQUIRE(L.head_dim > 0 && L.head_dim <= 1024 && L.num_key_value_heads > 0);
  HOGWILD_CUDA_REQUIRE(rope.rotary_dim % 2 == 0 && rope.rotary_dim <= L.head_dim);
  HOGWILD_CUDA_REQUIRE(rope.cos_sin != nullptr && rope.n_positions > 0);
}

}  // namespace

void kv_append(const bf16* qkv, int64_t token_stride, int64_t k_col, int64_t v_col,
               int64_t n_tokens, const int32_t* pos, const int32_t* slot, bf16* layer_pool,
               const KvLayout& layout, const RopeTableView& rope, float attn_factor,
               cudaStream_t stream) {
  check_rope(layout, rope);
  if (n_tokens == 0) return;
  dim3 grid(n_tokens, layout.num_key_value_heads);
  launch_pdl(kv_append_kernel, grid, dim3(layout.head_dim), 0, stream, qkv, token_stride, k_col,
             v_col, pos, slot, layer_pool, layout, rope, attn_factor);
}

void qk_norm_kv_append(bf16* qkv, int64_t token_stride, int64_t n_q, int64_t n_tokens,
                       const bf16* w_q, const bf16* w_k, float eps, const int32_t* pos,
                       const int32_t* slot, bf16* layer_pool, const KvLayout& layout,
                       const RopeTableView& rope, float attn_factor, cudaStream_t stream) {
  check_rope(layout, rope);
  HOGWILD_CUDA_REQUIRE(layout.head_dim % 32 == 0 && n_q > 0 && w_q != nullptr && w_k != nullptr);
  HOGWILD_CUDA_REQUIRE(token_stride >= (n_q + 2 * layout.num_key_value_heads) * layout.head_dim);
  if (n_tokens == 0) return;
  dim3 grid(n_tokens, n_q + layout.num_key_value_heads);
  launch_pdl(qk_norm_kv_append_kernel, grid, dim3(layout.head_dim), 0, stream, qkv, token_stride,
             static_cast<int>(n_q), w_q, w_k, eps, pos, slot, layer_pool, layout, rope,
             attn_factor);
}

void kv_promote(bf16* pool, const KvLayout& layout, int64_t n_layers, const int32_t* src_slot,
                const int32_t* dst_slot, int64_t n_tokens, int32_t delta, const RopeTableView& rope,
                cudaStream_t stream) {
  check_rope(layout, rope);
  HOGWILD_CUDA_REQUIRE(delta >= 0 && delta < rope.n_positions && n_layers > 0);
  if (n_tokens == 0) return;
  dim3 grid(n_tokens, layout.num_key_value_heads, n_layers);
  kv_promote_kernel<<<grid, layout.head_dim, 0, stream>>>(pool, layout, src_slot, dst_slot, delta,
                                                          rope);
  HOGWILD_CUDA_CHECK_LAUNCH();
}

}  // namespace hogwild::cuda
