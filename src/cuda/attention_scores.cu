// The attention scores of the KV budget (attention_scores.h): one CTA of 256 threads per (score
// tile, KV head). Thread (k, part) = (threadIdx.x / 4, threadIdx.x % 4) owns key k of the tile and
// dims part + 4 i of the dot product; the 4 parts of a key are adjacent lanes (two shuffles).
// A simple kernel: correctness first (docs/CUDA.md says what it costs).
#include "cuda/attention_scores.h"
#include "cuda/pdl.cuh"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 4 * kPageTokens;  // 4 threads per key of a tile

struct ScoreArgs {
  const bf16* q;
  AttnShape shape;
  const bf16* pool;
  KvLayout layout;
  RopeTableView rope;
  const bf16* q_norm;  // null: q is normalised already (or the model has no q-norm)
  float eps;
  ScorePlanView plan;
};

// Sum over the CTA of one value per thread (threads past the values pass 0). Every thread gets
// the sum. red: kThreads / 32 floats of shared memory, free on entry; free again on return.
__device__ float cta_sum(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float s = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) s += red[w];
  __syncthreads();
  return s;
}

// Query head hq of token `row` into qs (HD floats): q-norm first when a.q_norm is set (as the fused
// append's norm_rotate: bf16(x r w)), then rotated by `limit` with the attention factor over the
// first rotary_dim dims (rotate-half pairs), rounded to bf16 (the partial kernel's shared-memory
// query). Called by every thread; raw and red are shared scratch; qs is complete on return.
template <int HD>
__device__ void rotated_query(const ScoreArgs& a, int row, int hq, int limit, float* raw, float* qs,
                              float* red) {
  const int d = threadIdx.x;
  const bf16* qv = a.q + int64_t(row) * a.shape.q_token_stride + int64_t(hq) * HD;
  float x = d < HD ? __bfloat162float(qv[d]) : 0.0f;
  if (a.q_norm) {
    const float r = rsqrtf(cta_sum(x * x, red) / float(HD) + a.eps);
    if (d < HD) x = __bfloat162float(__float2bfloat16(x * r * __bfloat162float(a.q_norm[d])));
  }
  if (d < HD) raw[d] = x;
  __syncthreads();
  if (d < HD) {
    const int half = a.rope.rotary_dim / 2;
    float val = raw[d];
    if (d < a.rope.rotary_dim) {
      const float2 cs = a.rope.cos_sin[int64_t(limit) * half + (d < half ? d : d - half)];
      const float partner = raw[d < half ? d + half : d - half];
      val = (val * cs.x + (d < half ? -partner : partner) * cs.y) * a.shape.attn_factor;
    }
    qs[d] = __bfloat162float(__float2bfloat16(val));
  }
  __syncthreads();
}

// grid (max_tiles, num_key_value_heads), kThreads threads; CTA (b, kh) runs tile b for KV head kh.
template <int HD>
__global__ void __launch_bounds__(kThreads) attn_scores_kernel(ScoreArgs a) {
  pdl_launch_dependents();
  pdl_wait();  // q, the keys and lse are written by the kernels before
  if (blockIdx.x >= *a.plan.n_tiles) return;
  constexpr int kLd = HD + 4;  // row stride = 4 mod 32 words: the 32 lanes of a warp (8 keys x 4
                               // parts) hit 32 different banks
  __shared__ float ks[kPageTokens * kLd];
  __shared__ float raw[HD], qs[HD], red[kThreads / 32];
  const ScoreTile tile = a.plan.tiles[blockIdx.x];
  const int kh = blockIdx.y;
  const int G = a.shape.num_attention_heads / a.shape.num_key_value_heads;
  const bf16* kt = a.pool + a.layout.tile_offset(tile.page, 0, kh);  // (kPageTokens, HD)
  for (int i = threadIdx.x; i < kPageTokens * HD; i += kThreads) {
    const int k = i / HD, key = tile.key_start + k;
    const bool scored = key >= tile.key_from && key < tile.key_end;
    ks[k * kLd + i % HD] = scored ? __bfloat162float(kt[i]) : 0.0f;  // never a stale slot's NaN
  }
  // (the first rotated_query's barriers order these stores before the dots)
  const int k = threadIdx.x / 4, part = threadIdx.x % 4, key = tile.key_start + k;
  const bool scored = key >= tile.key_from && key < tile.key_end;
  const float scale_log2 = a.shape.scale * 1.4426950408889634f;
  float best = 0.0f;
  for (int p = 0; p < tile.pair_count; ++p) {
    const AttnPair pr = a.plan.pairs[tile.pair_start + p];
    for (int g = 0; g < G; ++g) {
      const int hq = kh * G + g;
      rotated_query<HD>(a, pr.row, hq, pr.limit, raw, qs, red);
      float dot = 0.0f;
#pragma unroll 8
      for (int i = 0; i < HD / 4; ++i) dot += qs[part + 4 * i] * ks[k * kLd + part + 4 * i];
      dot += __shfl_xor_sync(0xffffffffu, dot, 1);
      dot += __shfl_xor_sync(0xffffffffu, dot, 2);
      if (scored && key <= pr.limit) {
        const float lse = a.plan.lse[int64_t(pr.row) * a.shape.num_attention_heads + hq];
        best = fmaxf(best, exp2f(dot * scale_log2 - lse));
      }
      __syncthreads();  // every thread has read qs before the next query overwrites it
    }
  }
  // Non-negative floats order as their bits do: an integer max is the float max.
  if (part == 0 && scored && best > 0.0f)
    atomicMax(reinterpret_cast<int*>(a.plan.scores + tile.out + key), __float_as_int(best));
}

}  // namespace

void layer_attention_scores(const bf16* q, const AttnShape& shape, const bf16* layer_pool,
                            const KvLayout& layout, const RopeTableView& rope, const bf16* q_norm,
                            float eps, const ScorePlanView& plan, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(shape.head_dim == 64 || shape.head_dim == 128);
  HOGWILD_CUDA_REQUIRE(layout.head_dim == shape.head_dim &&
                       layout.num_key_value_heads == shape.num_key_value_heads);
  HOGWILD_CUDA_REQUIRE(shape.num_key_value_heads > 0 &&
                       shape.num_attention_heads % shape.num_key_value_heads == 0);
  HOGWILD_CUDA_REQUIRE(rope.rotary_dim <= shape.head_dim && rope.rotary_dim % 2 == 0);
  if (plan.max_tiles == 0) return;
  const ScoreArgs args{q, shape, layer_pool, layout, rope, q_norm, eps, plan};
  const dim3 grid(plan.max_tiles, shape.num_key_value_heads);
  if (shape.head_dim == 64)
    launch_pdl(attn_scores_kernel<64>, grid, dim3(kThreads), 0, stream, args);
  else
    launch_pdl(attn_scores_kernel<128>, grid, dim3(kThreads), 0, stream, args);
}

}  // namespace hogwild::cuda
