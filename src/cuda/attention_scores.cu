// The attention scores of the KV budget (attention_scores.h): one CTA of 256 threads per (score
// tile, KV head). Thread (k, part) = (threadIdx.x / 4, threadIdx.x % 4) owns key k of the tile and
// dims part + 4 i of the dot product; the 4 parts of a key are adjacent lanes (two shuffles).
// Each phase waits for memory once: the keys in one round of 16-byte loads, then up to
// kMaxQueries queries (with their limits and log-sum-exps) by the eight warps side by side.
#include "cuda/attention_scores.h"
#include "cuda/pdl.cuh"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 4 * kPageTokens;  // 4 threads per key of a tile
constexpr int kMaxQueries = 16;            // (pair, query head) combinations rotated at a time

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

// The (pair, query head) combinations c0 .. c0 + cc of a tile (c = pair index * G + h, query
// head kh * G + h), into qs[c' * HD ..] for c' = c - c0 < cc <= kMaxQueries: q-norm first when
// a.q_norm is set (as the fused append's norm_rotate: bf16(x r w)), then rotated by the pair's
// limit with the attention factor over the first rotary_dim dims (rotate-half pairs), rounded to
// bf16 (the partial kernel's shared-memory query); the pair's limit into lim[c'] and the row's
// log-sum-exp for that head into lse[c']. Warp w computes combinations w, w + 8, ..., each lane
// HD / 32 dims, the sum of squares by shuffles, so the eight warps' global loads overlap; raw:
// (kThreads / 32) x HD floats of scratch. Called by every thread; the outputs are complete after
// the caller's next __syncthreads.
template <int HD>
__device__ void rotated_queries(const ScoreArgs& a, const ScoreTile& tile, int kh, int G, int c0,
                                int cc, float* raw, float* qs, int* lim, float* lse) {
  constexpr int kPer = HD / 32;  // dims per lane: lane * kPer ..
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* rw = raw + warp * HD;
  const int half = a.rope.rotary_dim / 2;
  for (int c = warp; c < cc; c += kThreads / 32) {
    const AttnPair pr = a.plan.pairs[tile.pair_start + (c0 + c) / G];
    const int hq = kh * G + (c0 + c) % G;
    const bf16* qv =
        a.q + int64_t(pr.row) * a.shape.q_token_stride + int64_t(hq) * HD + lane * kPer;
    const float2* cs_row = a.rope.cos_sin + int64_t(pr.limit) * half;
    float x[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) x[i] = __bfloat162float(qv[i]);
    if (lane == 0) {
      lim[c] = pr.limit;
      lse[c] = a.plan.lse[int64_t(pr.row) * a.shape.num_attention_heads + hq];
    }
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
      qs[c * HD + d] = __bfloat162float(__float2bfloat16(val));
    }
    __syncwarp();  // rw is read before the warp's next combination overwrites it
  }
}

// The tile's keys into ks (row stride kLd), as floats; keys outside [key_from, key_end) as 0
// (never a stale slot's NaN). 16-byte loads, all issued before the first store, so the CTA waits
// for one round trip to memory rather than one per element.
template <int HD, int kLd>
__device__ void load_keys(const bf16* kt, const ScoreTile& tile, float* ks) {
  constexpr int kVec = 8;                                     // bf16 per 16-byte load
  constexpr int kLoads = kPageTokens * HD / kVec / kThreads;  // per thread: 4 (HD 128), 2 (64)
  static_assert(kLoads * kVec * kThreads == kPageTokens * HD);
  const uint4* src = reinterpret_cast<const uint4*>(kt);
  uint4 v[kLoads];
#pragma unroll
  for (int i = 0; i < kLoads; ++i) v[i] = src[threadIdx.x + i * kThreads];
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const int e = (threadIdx.x + i * kThreads) * kVec, k = e / HD, d = e % HD;
    const int key = tile.key_start + k;
    const bool scored = key >= tile.key_from && key < tile.key_end;
    const bf16* b = reinterpret_cast<const bf16*>(&v[i]);
#pragma unroll
    for (int j = 0; j < kVec; ++j) ks[k * kLd + d + j] = scored ? __bfloat162float(b[j]) : 0.0f;
  }
}

// grid (max_tiles, num_key_value_heads), kThreads threads; CTA (b, kh) runs tile b for KV head kh.
// The tile's (pair, query head) combinations, kMaxQueries at a time, are rotated into shared
// memory by the eight warps at once (rotated_queries) and every key of the tile is dotted with
// each: two barriers per kMaxQueries combinations.
template <int HD>
__global__ void __launch_bounds__(kThreads) attn_scores_kernel(ScoreArgs a) {
  pdl_launch_dependents();
  pdl_wait();  // q, the keys and lse are written by the kernels before
  if (blockIdx.x >= *a.plan.n_tiles) return;
  constexpr int kLd = HD + 4;  // row stride = 4 mod 32 words: the 32 lanes of a warp (8 keys x 4
                               // parts) hit 32 different banks
  __shared__ __align__(16) float ks[kPageTokens * kLd];
  __shared__ float raw[(kThreads / 32) * HD], qs[kMaxQueries * HD], lse[kMaxQueries];
  __shared__ int lim[kMaxQueries];
  const ScoreTile tile = a.plan.tiles[blockIdx.x];
  const int kh = blockIdx.y;
  const int G = a.shape.num_attention_heads / a.shape.num_key_value_heads;
  load_keys<HD, kLd>(a.pool + a.layout.tile_offset(tile.page, 0, kh), tile, ks);
  const int k = threadIdx.x / 4, part = threadIdx.x % 4, key = tile.key_start + k;
  const bool scored = key >= tile.key_from && key < tile.key_end;
  const float scale_log2 = a.shape.scale * 1.4426950408889634f;
  float best = 0.0f;
  const int combos = tile.pair_count * G;
  for (int c0 = 0; c0 < combos; c0 += kMaxQueries) {
    const int cc = min(kMaxQueries, combos - c0);
    rotated_queries<HD>(a, tile, kh, G, c0, cc, raw, qs, lim, lse);
    __syncthreads();  // the queries (and, the first time, the keys) are in shared memory
    for (int c = 0; c < cc; ++c) {
      const float* q = qs + c * HD;
      float dot = 0.0f;
#pragma unroll 8
      for (int i = 0; i < HD / 4; ++i) dot += q[part + 4 * i] * ks[k * kLd + part + 4 * i];
      dot += __shfl_xor_sync(0xffffffffu, dot, 1);
      dot += __shfl_xor_sync(0xffffffffu, dot, 2);
      if (scored && key <= lim[c]) best = fmaxf(best, exp2f(dot * scale_log2 - lse[c]));
    }
    __syncthreads();  // every thread has read qs before the next queries overwrite it
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
