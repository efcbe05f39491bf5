// Hogwild attention kernels (attention.h): per-(item, KV head) partial states on the tensor cores
// (WMMA bf16 16x16x16, fp32 accumulation), then a log-sum-exp combine per (row, head).
// Kernels first, launchers second.
#include <mma.h>

#include "cuda/attention.h"
#include "cuda/cuda_check.h"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;
namespace wmma = nvcuda::wmma;

constexpr int kThreads = 256;        // 8 warps
constexpr int kRows = kAttnMaxRows;  // 64 query rows per CTA
constexpr int kKeys = kPageTokens;   // 64 keys per tile
constexpr int kSLd = kKeys + 4;      // fp32 scores row stride
constexpr int kPLd = kKeys + 8;      // bf16 probabilities row stride

template <int HD>
struct Smem {
  static constexpr int kQLd = HD + 8;  // bf16 Q/K/V row stride (16-byte pad against bank conflicts)
  static constexpr int kOLd = HD + 4;  // fp32 O row stride
  bf16 q[kRows * kQLd];
  bf16 k[2][kKeys * kQLd];
  bf16 v[2][kKeys * kQLd];
  float s[kRows * kSLd];
  bf16 p[kRows * kPLd];
  float o[kRows * kOLd];
  float m[kRows];
  float l[kRows];
  int32_t limit[kRows];
};

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const int n = valid ? 16 : 0;  // 0 bytes read -> zero fill
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

struct PartialArgs {
  const bf16* q;
  AttnShape shape;
  const bf16* pool;
  KvLayout layout;
  RopeTableView rope;
  AttnPlanView plan;
};

template <int HD>
__device__ void load_tile(Smem<HD>& sm, int stage, const PartialArgs& a, const AttnItem& it,
                          int tile, int h) {
  constexpr int kChunks = kKeys * HD / 8;  // 16-byte pieces per K (or V) tile
  const int key0 = it.key_start + tile * kKeys;
  const int32_t page = a.plan.pages[it.page_base + key0 / kKeys];
  const bf16* ksrc = a.pool + a.layout.tile_offset(page, 0, h);
  const bf16* vsrc = a.pool + a.layout.tile_offset(page, 1, h);
  for (int c = threadIdx.x; c < kChunks; c += kThreads) {
    const int row = c / (HD / 8), col = (c % (HD / 8)) * 8;
    const bool valid = key0 + row < it.key_end;  // keys past the end: zeros (never NaN garbage)
    cp_async16(&sm.k[stage][row * Smem<HD>::kQLd + col], ksrc + row * HD + col, valid);
    cp_async16(&sm.v[stage][row * Smem<HD>::kQLd + col], vsrc + row * HD + col, valid);
  }
}

// grid (max_items, num_key_value_heads), kThreads threads, dynamic smem sizeof(Smem<HD>).
template <int HD>
__global__ void __launch_bounds__(kThreads) attn_partial_kernel(PartialArgs a) {
  if (blockIdx.x >= *a.plan.n_items) return;
  extern __shared__ __align__(128) unsigned char raw[];
  Smem<HD>& sm = *reinterpret_cast<Smem<HD>*>(raw);
  constexpr int QLd = Smem<HD>::kQLd, OLd = Smem<HD>::kOLd;
  const AttnItem it = a.plan.items[blockIdx.x];
  const int h = blockIdx.y;
  const int G = a.shape.num_attention_heads / a.shape.num_key_value_heads;
  const int n_rows = it.pair_count * G;
  const int n_r16 = (n_rows + 15) / 16;
  const int warp = threadIdx.x / 32;
  const int n_tiles = (it.key_end - it.key_start + kKeys - 1) / kKeys;

  load_tile(sm, 0, a, it, 0, h);
  cp_async_commit();

  // Queries, rotated per pair by its limit (p - o) with the attention factor; zero pad rows.
  const int half = a.rope.rotary_dim / 2;
  const int used_rows = n_r16 * 16;  // rows past this are never touched by the MMAs
  for (int idx = threadIdx.x; idx < used_rows * HD; idx += kThreads) {
    const int r = idx / HD, d = idx % HD;
    float val = 0.0f;
    if (r < n_rows) {
      const AttnPair pr = a.plan.pairs[it.pair_start + r / G];
      const bf16* qv = a.q + int64_t(pr.row) * a.shape.q_token_stride + int64_t(h * G + r % G) * HD;
      val = __bfloat162float(qv[d]);
      if (d < a.rope.rotary_dim) {
        const float2 cs = a.rope.cos_sin[int64_t(pr.limit) * half + (d < half ? d : d - half)];
        const float partner = __bfloat162float(qv[d < half ? d + half : d - half]);
        val = (val * cs.x + (d < half ? -partner : partner) * cs.y) * a.shape.attn_factor;
      }
      if (d == 0) sm.limit[r] = pr.limit;
    } else if (d == 0) {
      sm.limit[r] = -1;
    }
    sm.q[r * QLd + d] = __float2bfloat16(val);
    sm.o[r * OLd + d] = 0.0f;
    if (d == 0) {
      sm.m[r] = -INFINITY;
      sm.l[r] = 0.0f;
    }
  }
  const float scale_log2 = a.shape.scale * 1.4426950408889634f;

  for (int tile = 0; tile < n_tiles; ++tile) {
    if (tile + 1 < n_tiles) load_tile(sm, (tile + 1) & 1, a, it, tile + 1, h);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const int st = tile & 1;

    // S = Q K^T (n_r16 x 4 tiles of 16x16).
    for (int t = warp; t < n_r16 * 4; t += kThreads / 32) {
      const int rt = t / 4, ct = t % 4;
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int k = 0; k < HD / 16; ++k) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fb;
        wmma::load_matrix_sync(fa, &sm.q[rt * 16 * QLd + k * 16], QLd);
        wmma::load_matrix_sync(fb, &sm.k[st][ct * 16 * QLd + k * 16], QLd);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(&sm.s[rt * 16 * kSLd + ct * 16], acc, kSLd, wmma::mem_row_major);
    }
    __syncthreads();

    // Online softmax: 4 threads per row, 16 keys each; rescale the row's O by alpha. Whole warps
    // (8 rows) skip unused row tiles (used_rows is a multiple of 16), so the shuffles stay full.
    if (threadIdx.x / 4 < used_rows) {
      const int r = threadIdx.x / 4, sub = threadIdx.x % 4;
      const int key0 = it.key_start + tile * kKeys;
      const int lim = sm.limit[r];
      float sv[16];
      float mx = -INFINITY;
#pragma unroll
      for (int c = 0; c < 16; ++c) {
        const int key = key0 + sub * 16 + c;
        const bool vis = key <= lim && key < it.key_end;
        sv[c] = vis ? sm.s[r * kSLd + sub * 16 + c] * scale_log2 : -INFINITY;
        mx = fmaxf(mx, sv[c]);
      }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_old = sm.m[r];
      const float m_new = fmaxf(m_old, mx);
      float sum = 0.0f;
#pragma unroll
      for (int c = 0; c < 16; ++c) {
        const float pv = sv[c] == -INFINITY ? 0.0f : exp2f(sv[c] - m_new);
        sum += pv;
        sm.p[r * kPLd + sub * 16 + c] = __float2bfloat16(pv);
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float alpha = m_old == -INFINITY ? 0.0f : exp2f(m_old - m_new);
      if (tile > 0) {
        for (int d = sub; d < HD; d += 4) sm.o[r * OLd + d] *= alpha;
      }
      __syncwarp();
      if (sub == 0) {
        sm.m[r] = m_new;
        sm.l[r] = sm.l[r] * alpha + sum;
      }
    }
    __syncthreads();

    // O += P V (n_r16 x HD/16 tiles).
    for (int t = warp; t < n_r16 * (HD / 16); t += kThreads / 32) {
      const int rt = t / (HD / 16), ct = t % (HD / 16);
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, &sm.o[rt * 16 * OLd + ct * 16], OLd, wmma::mem_row_major);
#pragma unroll
      for (int k = 0; k < kKeys / 16; ++k) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, &sm.p[rt * 16 * kPLd + k * 16], kPLd);
        wmma::load_matrix_sync(fb, &sm.v[st][k * 16 * QLd + ct * 16], QLd);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(&sm.o[rt * 16 * OLd + ct * 16], acc, OLd, wmma::mem_row_major);
    }
    __syncthreads();
  }

  // Partial states of the item's rows.
  const int nh = a.shape.num_attention_heads;
  for (int idx = threadIdx.x; idx < n_rows * HD; idx += kThreads) {
    const int r = idx / HD, d = idx % HD;
    const int64_t e = it.entry_start + r / G;
    const int hq = h * G + r % G;
    a.plan.part_o[(e * nh + hq) * HD + d] = sm.o[r * OLd + d];
    if (d == 0) a.plan.part_ml[e * nh + hq] = make_float2(sm.m[r], sm.l[r]);
  }
}

constexpr int kCombineCached = 512;  // entries per row whose weights live in shared memory

// grid (n_rows, num_attention_heads), head_dim threads (64 or 128). Pass 1: the max of m over the
// row's entries; pass 2: weights 2^(m_e - max) (shared memory) and the denominator; pass 3: the
// weighted sum of the un-normalised outputs, entries independent so their loads overlap.
__global__ void attn_combine_kernel(AttnPlanView plan, int nh, int hd, bf16* out) {
  __shared__ float w[kCombineCached];
  __shared__ float red[4];
  const int t = plan.row_begin + blockIdx.x, hq = blockIdx.y, d = threadIdx.x;
  const int lane = d & 31, warp = d >> 5, n_warps = blockDim.x >> 5;
  const int e0 = plan.row_entry_ptr[t], n = plan.row_entry_ptr[t + 1] - e0;
  auto ml = [&](int k) { return plan.part_ml[int64_t(plan.row_entries[e0 + k]) * nh + hq]; };

  float mx = -INFINITY;
  for (int k = d; k < n; k += blockDim.x) mx = fmaxf(mx, ml(k).x);
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (lane == 0) red[warp] = mx;
  __syncthreads();
  mx = red[0];
  for (int i = 1; i < n_warps; ++i) mx = fmaxf(mx, red[i]);
  __syncthreads();

  float den = 0.0f;
  for (int k = d; k < n; k += blockDim.x) {
    const float2 s = ml(k);
    const float wk = (s.x == -INFINITY || mx == -INFINITY) ? 0.0f : exp2f(s.x - mx);  // empty: 0
    if (k < kCombineCached) w[k] = wk;
    den += wk * s.y;
  }
  for (int o = 16; o > 0; o >>= 1) den += __shfl_xor_sync(0xffffffffu, den, o);
  if (lane == 0) red[warp] = den;
  __syncthreads();
  den = 0.0f;
  for (int i = 0; i < n_warps; ++i) den += red[i];

  float num = 0.0f;
  int k = 0;
  for (; k + 4 <= n && k + 4 <= kCombineCached; k += 4) {
    float o4[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      o4[u] = plan.part_o[(int64_t(plan.row_entries[e0 + k + u]) * nh + hq) * hd + d];
#pragma unroll
    for (int u = 0; u < 4; ++u) num += w[k + u] * o4[u];
  }
  for (; k < n; ++k) {
    const float2 s = ml(k);
    const float wk = k < kCombineCached ? w[k] : ((s.x == -INFINITY) ? 0.0f : exp2f(s.x - mx));
    num += wk * plan.part_o[(int64_t(plan.row_entries[e0 + k]) * nh + hq) * hd + d];
  }
  out[(int64_t(t) * nh + hq) * hd + d] = __float2bfloat16(den > 0.0f ? num / den : 0.0f);
}

template <int HD>
void launch_partial(const PartialArgs& args, int kv_heads, cudaStream_t stream) {
  const size_t smem = sizeof(Smem<HD>);
  static bool configured = false;  // per template instance; the attribute is per-function
  if (!configured) {
    HOGWILD_CUDA_CHECK(cudaFuncSetAttribute(attn_partial_kernel<HD>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(smem)));
    configured = true;
  }
  dim3 grid(args.plan.max_items, kv_heads);
  attn_partial_kernel<HD><<<grid, kThreads, smem, stream>>>(args);
  HOGWILD_CUDA_CHECK_LAUNCH();
}

}  // namespace

void hogwild_attention(const bf16* q, const AttnShape& shape, const bf16* layer_pool,
                       const KvLayout& layout, const RopeTableView& rope, const AttnPlanView& plan,
                       bf16* out, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(shape.head_dim == 64 || shape.head_dim == 128);
  HOGWILD_CUDA_REQUIRE(layout.head_dim == shape.head_dim);
  HOGWILD_CUDA_REQUIRE(shape.num_key_value_heads > 0 &&
                       shape.num_attention_heads % shape.num_key_value_heads == 0);
  HOGWILD_CUDA_REQUIRE(shape.num_attention_heads / shape.num_key_value_heads <= kAttnMaxRows);
  HOGWILD_CUDA_REQUIRE(layout.num_key_value_heads == shape.num_key_value_heads);
  HOGWILD_CUDA_REQUIRE(rope.rotary_dim <= shape.head_dim && rope.rotary_dim % 2 == 0);
  if (plan.n_rows == 0) return;
  if (plan.max_items > 0) {
    const PartialArgs args{q, shape, layer_pool, layout, rope, plan};
    if (shape.head_dim == 64)
      launch_partial<64>(args, shape.num_key_value_heads, stream);
    else
      launch_partial<128>(args, shape.num_key_value_heads, stream);
  }
  dim3 grid(plan.n_rows, shape.num_attention_heads);
  attn_combine_kernel<<<grid, shape.head_dim, 0, stream>>>(plan, shape.num_attention_heads,
                                                           shape.head_dim, out);
  HOGWILD_CUDA_CHECK_LAUNCH();
}

}  // namespace hogwild::cuda
