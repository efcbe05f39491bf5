// R-KV's redundancy term on the GPU (key_redundancy.h). Three small kernels per layer, each CTA
// of 128 threads working along head_dim (thread t owns dims t and t + 128): the chunk keys (one
// CTA per chunk and KV head, over the chunk's kept tokens), their sum per KV head, and each
// chunk's dot with that sum less its own norm. Block reductions by warp shuffles.
#include "cuda/key_redundancy.h"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 128;  // 2 dims per thread: head_dim <= 256

// The sum of v over the CTA (every thread gets it); red: kThreads / 32 floats of shared memory.
__device__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();  // red is free (an earlier call's readers are done)
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float s = 0;
  for (int w = 0; w < kThreads / 32; ++w) s += red[w];
  return s;
}

// grid (n, KV heads): keys[h, i] = unit(sum over kept tokens j of chunk i of unit(k_j)); zero
// when nothing of the chunk is kept or its keys are zero.
__global__ void chunk_keys_kernel(const bf16* pool, KvLayout layout, RedundancyArgs a) {
  __shared__ float red[kThreads / 32];
  const int i = blockIdx.x, h = blockIdx.y, hd = layout.head_dim;
  const int d0 = threadIdx.x, d1 = threadIdx.x + kThreads;
  float acc0 = 0, acc1 = 0;
  for (int j = a.chunks[2 * i]; j < a.chunks[2 * i + 1]; ++j) {
    const int32_t page = a.pages[j / kPageTokens];
    if (!a.kept[j] || page < 0) continue;  // a given-back page holds forgotten tokens only
    const bf16* k = pool + layout.tile_offset(page, 0, h) + int64_t(j % kPageTokens) * hd;
    const float x0 = d0 < hd ? __bfloat162float(k[d0]) : 0.0f;
    const float x1 = d1 < hd ? __bfloat162float(k[d1]) : 0.0f;
    const float ss = block_sum(x0 * x0 + x1 * x1, red);
    if (ss <= 0) continue;
    const float inv = rsqrtf(ss);
    acc0 += x0 * inv, acc1 += x1 * inv;
  }
  const float ss = block_sum(acc0 * acc0 + acc1 * acc1, red);
  const float inv = ss > 0 ? rsqrtf(ss) : 0.0f;
  float* out = a.keys + (int64_t(h) * a.n + i) * hd;
  if (d0 < hd) out[d0] = acc0 * inv;
  if (d1 < hd) out[d1] = acc1 * inv;
}

// grid (KV heads): sum[h] = sum over chunks of keys[h, i].
__global__ void key_sum_kernel(KvLayout layout, RedundancyArgs a) {
  const int h = blockIdx.x, hd = layout.head_dim;
  for (int d = threadIdx.x; d < hd; d += kThreads) {
    float s = 0;
    for (int i = 0; i < a.n; ++i) s += a.keys[(int64_t(h) * a.n + i) * hd + d];
    a.sum[int64_t(h) * hd + d] = s;
  }
}

// grid (n, KV heads): out[i] += scale * (keys[h, i] . sum[h] - |keys[h, i]|^2).
__global__ void redundancy_kernel(KvLayout layout, RedundancyArgs a) {
  __shared__ float red[kThreads / 32];
  const int i = blockIdx.x, h = blockIdx.y, hd = layout.head_dim;
  const float* c = a.keys + (int64_t(h) * a.n + i) * hd;
  const float* s = a.sum + int64_t(h) * hd;
  float v = 0;
  for (int d = threadIdx.x; d < hd; d += kThreads) v += c[d] * (s[d] - c[d]);
  v = block_sum(v, red);
  if (threadIdx.x == 0) atomicAdd(a.out + i, a.scale * v);
}

}  // namespace

void layer_key_redundancy(const bf16* layer_pool, const KvLayout& layout, const RedundancyArgs& a,
                          cudaStream_t stream) {
  const dim3 per_chunk(a.n, layout.num_key_value_heads);
  chunk_keys_kernel<<<per_chunk, kThreads, 0, stream>>>(layer_pool, layout, a);
  key_sum_kernel<<<layout.num_key_value_heads, kThreads, 0, stream>>>(layout, a);
  redundancy_kernel<<<per_chunk, kThreads, 0, stream>>>(layout, a);
}

}  // namespace hogwild::cuda
