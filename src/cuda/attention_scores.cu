// The attention scores of the KV budget (attention_scores.h): one CTA of 256 threads per (score
// tile, KV head). Thread (k, part) = (threadIdx.x / 4, threadIdx.x % 4) owns key k of the tile and
// dims part + 4 i of the dot product; the 4 parts of a key are adjacent lanes (two shuffles).
#include "cuda/attention_scores.h"
#include "cuda/pdl.cuh"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 4 * kPageTokens;  // 4 threads per key of a tile
constexpr int kMaxHeads = 16;              // query heads rotated at a time (G above: in groups)

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

// Query heads hq = h0 + h of token `row` for h < hc, into qs[h * HD ..]: q-norm first when a.q_norm
// is set (as the fused append's norm_rotate: bf16(x r w)), then rotated by `limit` with the
// attention factor over the first rotary_dim dims (rotate-half pairs), rounded to bf16 (the
// partial kernel's shared-memory query). Warp w computes heads w, w + 8, ..., each lane HD / 32
// dims, the sum of squares by shuffles; raw: (kThreads / 32) x HD floats of scratch. Called by
// every thread; qs is complete after the caller's next __syncthreads.
template <int HD>
__device__ void rotated_queries(const ScoreArgs& a, int row, int h0, int hc, int limit, float* raw,
                                float* qs) {
  constexpr int kPer = HD / 32;  // dims per lane: lane * kPer ..
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* rw = raw + warp * HD;
  const int half = a.rope.rotary_dim / 2;
  const float2* cs_row = a.rope.cos_sin + int64_t(limit) * half;
  for (int h = warp; h < hc; h += kThreads / 32) {
    const int hq = h0 + h;
    const bf16* qv = a.q + int64_t(row) * a.shape.q_token_stride + int64_t(hq) * HD + lane * kPer;
    float x[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) x[i] = __bfloat162float(qv[i]);
    if (a.q_norm) {
      float ss = 0.0f;
#pragma unroll
      for (int i = 0; i < kPer; ++i) ss += x[i] * x[i];
      for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
      const float r = rsqrtf(ss / float(HD) + a.eps);
#pragma unroll
      for (int i = 0; i < kPer; ++i)
        x[i] = __bfloat162float(
            __float2bfloat16(x[i] * r * __bfloat162float(a.q_norm[lane * kPer + i])));
    }
#pragma unroll
    for (int i = 0; i < kPer; ++i) rw[lane * kPer + i] = x[i];
    __syncwarp();
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int d = lane * kPer + i;
      float val = x[i];
      if (d < a.rope.rotary_dim) {
        const float2 cs = cs_row[d < half ? d : d - half];
        const float partner = rw[d < half ? d + half : d - half];
        val = (val * cs.x + (d < half ? -partner : partner) * cs.y) * a.shape.attn_factor;
      }
      qs[h * HD + d] = __bfloat162float(__float2bfloat16(val));
    }
    __syncwarp();  // rw is read before the warp's next head overwrites it
  }
}

// grid (max_tiles, num_key_value_heads), kThreads threads; CTA (b, kh) runs tile b for KV head kh.
// Per pair, the G query heads of kh are rotated once (rotated_queries, at most kMaxHeads at a time)
// and every key of the tile is dotted with each: two barriers per pair and group of heads.
template <int HD>
__global__ void __launch_bounds__(kThreads) attn_scores_kernel(ScoreArgs a) {
  pdl_launch_dependents();
  pdl_wait();  // q, the keys and lse are written by the kernels before
  if (blockIdx.x >= *a.plan.n_tiles) return;
  constexpr int kLd = HD + 4;  // row stride = 4 mod 32 words: the 32 lanes of a warp (8 keys x 4
                               // parts) hit 32 different banks
  __shared__ float ks[kPageTokens * kLd];
  __shared__ float raw[(kThreads / 32) * HD], qs[kMaxHeads * HD];
  const ScoreTile tile = a.plan.tiles[blockIdx.x];
  const int kh = blockIdx.y;
  const int G = a.shape.num_attention_heads / a.shape.num_key_value_heads;
  const bf16* kt = a.pool + a.layout.tile_offset(tile.page, 0, kh);  // (kPageTokens, HD)
  for (int i = threadIdx.x; i < kPageTokens * HD; i += kThreads) {
    const int k = i / HD, key = tile.key_start + k;
    const bool scored = key >= tile.key_from && key < tile.key_end;
    ks[k * kLd + i % HD] = scored ? __bfloat162float(kt[i]) : 0.0f;  // never a stale slot's NaN
  }
  const int k = threadIdx.x / 4, part = threadIdx.x % 4, key = tile.key_start + k;
  const bool scored = key >= tile.key_from && key < tile.key_end;
  const float scale_log2 = a.shape.scale * 1.4426950408889634f;
  float best = 0.0f;
  for (int p = 0; p < tile.pair_count; ++p) {
    const AttnPair pr = a.plan.pairs[tile.pair_start + p];
    const bool seen = scored && key <= pr.limit;
    for (int h0 = 0; h0 < G; h0 += kMaxHeads) {
      const int hc = min(kMaxHeads, G - h0);
      rotated_queries<HD>(a, pr.row, kh * G + h0, hc, pr.limit, raw, qs);
      __syncthreads();  // the queries (and, the first time, the keys) are in shared memory
      const float* lse = a.plan.lse + int64_t(pr.row) * a.shape.num_attention_heads + kh * G + h0;
      for (int h = 0; h < hc; ++h) {
        const float* q = qs + h * HD;
        float dot = 0.0f;
#pragma unroll 8
        for (int i = 0; i < HD / 4; ++i) dot += q[part + 4 * i] * ks[k * kLd + part + 4 * i];
        dot += __shfl_xor_sync(0xffffffffu, dot, 1);
        dot += __shfl_xor_sync(0xffffffffu, dot, 2);
        if (seen) best = fmaxf(best, exp2f(dot * scale_log2 - lse[h]));
      }
      __syncthreads();  // every thread has read qs before the next queries overwrite it
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
