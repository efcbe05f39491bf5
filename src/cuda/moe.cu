// Mixture-of-experts kernels (moe.h). Routing first, expert products second, launchers last.
//
// Expert products: the skinny kernel's tile (skinny_gemm.cu) with the rows gathered by the
// routing. A CTA is 16 W rows of one chosen expert (blockIdx.y indexes MoeRoute::active) x the
// expert's assignments in passes of NT n-tiles of 8; K split over kWarps warps in steps of 128. In
// a step, lane (g = lane / 4, t = lane % 4) loads for u < 4 the eight values k = 32 u + 8 t + e of
// W rows g and g + 8 and of the pass's token rows 8 j + g, and feeds them to two mma.sync
// m16n8k16 as physical elements 0-3 and 4-7 (the same permutation of the 32-wide chunk for W and
// x, so the dot products are unchanged).
#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/mma.cuh"
#include "cuda/moe.h"
#include "cuda/pdl.cuh"
#include "cuda/quant_dequant.cuh"
#include "cuda/quant_gemm.h"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kWarps = 4;
constexpr int kRouteThreads = 1024;    // the routing CTA: a warp per row, a thread per expert
constexpr int kRouteThreadsFew = 128;  // few rows of at most 128 experts: fewer warps to sync
constexpr int kPerLane = kMoeMaxExperts / 32;

// ---- routing ----

// Inclusive block-wide scan of v over NT threads; `warp_sums` (32) shared scratch.
template <int NT>
__device__ int block_scan(int v, int* warp_sums) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int o = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += o;
  }
  if (lane == 31) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int s = lane < NT / 32 ? warp_sums[lane] : 0;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int o = __shfl_up_sync(0xffffffffu, s, d);
      if (lane >= d) s += o;
    }
    warp_sums[lane] = s;
  }
  __syncthreads();
  if (warp > 0) v += warp_sums[warp - 1];
  __syncthreads();
  return v;
}

// One CTA of NT >= E threads: a warp per row (softmax, top-k, renormalise, sort by expert), then
// the grouping of all T k assignments by expert.
template <int NT>
__global__ void __launch_bounds__(NT)
    moe_route_kernel(const float* logits, int T, int E, int k, bool norm, MoeRoute r) {
  __shared__ int cnt[kMoeMaxExperts];
  __shared__ int eoff[kMoeMaxExperts];
  __shared__ int warp_sums[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  pdl_wait();
  pdl_launch_dependents();
  for (int e = threadIdx.x; e < kMoeMaxExperts; e += NT) cnt[e] = 0;
  for (int t = warp; t < T; t += NT / 32) {
    float p[kPerLane];
    float mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int e = lane + 32 * i;
      p[i] = e < E ? logits[int64_t(t) * E + e] : -INFINITY;
      mx = fmaxf(mx, p[i]);
    }
#pragma unroll
    for (int d = 16; d > 0; d /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, d));
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      p[i] = lane + 32 * i < E ? expf(p[i] - mx) : -1.0f;
      if (p[i] >= 0.0f) sum += p[i];
    }
#pragma unroll
    for (int d = 16; d > 0; d /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, d);
    const float inv = 1.0f / sum;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)  // a NaN probability (from NaN logits) counts as 0, so
      if (lane + 32 * i < E) p[i] = p[i] * inv >= 0.0f ? p[i] * inv : 0.0f;  // k stay in range
    // top-k by repeated arg-max (value descending, then index ascending); taken entries -> -1
    int sel_e = 0;
    float sel_w = 0.0f, wsum = 0.0f;
    for (int j = 0; j < k; ++j) {
      float bv = -1.0f;
      int bi = 0x7fffffff;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i)
        if (p[i] > bv) bv = p[i], bi = lane + 32 * i;  // ascending index: first max wins
#pragma unroll
      for (int d = 16; d > 0; d /= 2) {
        const float ov = __shfl_xor_sync(0xffffffffu, bv, d);
        const int oi = __shfl_xor_sync(0xffffffffu, bi, d);
        if (ov > bv || (ov == bv && oi < bi)) bv = ov, bi = oi;
      }
#pragma unroll
      for (int i = 0; i < kPerLane; ++i)
        if (lane + 32 * i == bi) p[i] = -1.0f;
      if (lane == j) sel_e = bi, sel_w = bv;
      wsum += bv;
    }
    if (norm) sel_w /= wsum;
    // sort the k choices by expert: lane j's rank among lanes < k
    int rank = 0;
    for (int j = 0; j < k; ++j) {
      const int oe = __shfl_sync(0xffffffffu, sel_e, j);
      if (lane < k && oe < sel_e) ++rank;
    }
    if (lane < k) {
      r.expert[int64_t(t) * k + rank] = sel_e;
      r.weight[int64_t(t) * k + rank] = sel_w;
    }
  }
  __syncthreads();  // global writes of this block are visible to it after the barrier
  const int n_assign = T * k;
  for (int a = threadIdx.x; a < n_assign; a += NT)
    r.assign[a] = atomicAdd(&cnt[r.expert[a]], 1);  // rank within the expert (any order)
  __syncthreads();
  const int e = threadIdx.x;
  const int c = e < E ? cnt[e] : 0;
  const int off_incl = block_scan<NT>(c, warp_sums);
  const int act_incl = block_scan<NT>(c > 0 ? 1 : 0, warp_sums);
  if (e < E) {
    eoff[e] = off_incl - c;
    if (c > 0) {
      r.active[act_incl - 1] = e;
      r.counts[act_incl - 1] = c;
      r.offsets[act_incl - 1] = off_incl - c;
    }
  }
  if (e == NT - 1) *r.n_active = act_incl;
  __syncthreads();
  for (int a = threadIdx.x; a < n_assign; a += NT) {
    const int pos = eoff[r.expert[a]] + r.assign[a];
    r.assign[a] = pos;
    r.rows[pos] = a / k;
  }
}

// ---- expert products ----

struct MoeArgs {
  const bf16* x;  // swiglu: (T, in) token rows; down: (T k, in) assignment rows
  const bf16* W;  // (E, out, in) bf16; null when the experts are quantized
  bf16* act;      // swiglu: (T k, out / 2)
  float* y;       // down: (T k, out)
  MoeRoute r;
  int in, out;
  bool swiglu;
  SkinnyNormIn norm;  // swiglu: the fused RMSNorm's consumer side (skinny_gemm.h); ss null: none
  // Quantized experts (quant_gemm.h QuantWeight of E out rows: expert e's row j is row e out + j):
  // its packed words and (scale, zero point) words, group size, groups and words per row.
  const uint32_t* qw;
  const uint32_t* qsz;
  int group_size, n_groups, words_per_row;
};

constexpr int kDense = int(WeightFormat::dense);

struct WStep {
  uint4 lo[4], hi[4];
};

__device__ __forceinline__ void load_w(const bf16* w_lo, const bf16* w_hi, int in, int step, int t,
                                       WStep& w) {
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int k = step * 128 + 32 * u + 8 * t;
    if (k < in) {
      w.lo[u] = ld_stream_ordered(w_lo + k);
      w.hi[u] = ld_stream_ordered(w_hi + k);
    } else {
      w.lo[u] = w.hi[u] = make_uint4(0, 0, 0, 0);
    }
  }
}

// grid (tiles, moe_max_active), kWarps * 32 threads. swiglu: tile = 8 features (gate rows i,
// up rows I + i); down: tile = 16 output rows. F: kDense (bf16 W) or a packed WeightFormat (qw,
// qsz: the block's exact bf16 products scaled by the group scales, as in skinny_quant_kernel;
// PB: groups of whole 128-k blocks).
template <int F, bool PB, int NT>
__global__ void __launch_bounds__(kWarps * 32) moe_mma_kernel(MoeArgs a) {
  __shared__ float red[kWarps][NT][32][4];
  const int slot = blockIdx.y;
  pdl_wait();  // the routing is the previous kernel's output
  pdl_launch_dependents();
  if (slot >= *a.r.n_active) return;
  const int e = a.r.active[slot], n = a.r.counts[slot], off = a.r.offsets[slot];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  int row_lo, row_hi;
  if (a.swiglu) {
    const int half = a.out / 2, i = min(int(blockIdx.x) * 8 + g, half - 1);
    row_lo = i, row_hi = half + i;
  } else {
    row_lo = min(int(blockIdx.x) * 16 + g, a.out - 1);
    row_hi = min(int(blockIdx.x) * 16 + g + 8, a.out - 1);
  }
  const int n_steps = (a.in + 127) / 128;
  const bf16* w_lo = nullptr;
  const bf16* w_hi = nullptr;
  const uint32_t *qw_lo = nullptr, *qw_hi = nullptr, *sz_lo = nullptr, *sz_hi = nullptr;
  if constexpr (F == kDense) {
    const bf16* We = a.W + int64_t(e) * a.out * a.in;
    w_lo = We + int64_t(row_lo) * a.in;
    w_hi = We + int64_t(row_hi) * a.in;
  } else {
    const int64_t r_lo = int64_t(e) * a.out + row_lo, r_hi = int64_t(e) * a.out + row_hi;
    qw_lo = a.qw + r_lo * a.words_per_row;
    qw_hi = a.qw + r_hi * a.words_per_row;
    sz_lo = a.qsz + r_lo * a.n_groups;
    sz_hi = a.qsz + r_hi * a.n_groups;
  }

  for (int p0 = 0; p0 < n; p0 += 8 * NT) {
    const bf16* xr[NT];
    bool live[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int pa = p0 + 8 * j + g;
      live[j] = pa < n;
      const int row = live[j] ? (a.swiglu ? a.r.rows[off + pa] : off + pa) : 0;
      xr[j] = a.x + int64_t(row) * a.in + 8 * t;
    }
    float c[NT][4];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) c[j][i] = 0.0f;
    if constexpr (F == kDense) {
      WStep w0, w1;
      int s = warp;
      if (s < n_steps) load_w(w_lo, w_hi, a.in, s, t, w0);
      for (; s < n_steps; s += kWarps) {
        if (s + kWarps < n_steps) load_w(w_lo, w_hi, a.in, s + kWarps, t, w1);
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int k = s * 128 + 32 * u;
#pragma unroll
          for (int j = 0; j < NT; ++j) {
            uint4 xv = make_uint4(0, 0, 0, 0);
            if (live[j] && k + 8 * t < a.in) xv = __ldg(reinterpret_cast<const uint4*>(xr[j] + k));
            mma_bf16(c[j], w0.lo[u].x, w0.hi[u].x, w0.lo[u].y, w0.hi[u].y, xv.x, xv.y);
            mma_bf16(c[j], w0.lo[u].z, w0.hi[u].z, w0.lo[u].w, w0.hi[u].w, xv.z, xv.w);
          }
        }
        w0 = w1;
      }
    } else {
      qdev::WBlock<F> w0, w1;
      int b = warp;
      if (b < n_steps) qdev::load_block<F, true>(qw_lo, qw_hi, b, t, w0);
      for (; b < n_steps; b += kWarps) {
        if (b + kWarps < n_steps) qdev::load_block<F, true>(qw_lo, qw_hi, b + kWarps, t, w1);
        float cb[NT][4];  // PB: the block's products before the scale
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) cb[j][i] = 0.0f;
        uint32_t s_lo = 0, s_hi = 0;
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int k = b * 128 + 32 * u;
          if (!PB || u == 0) {
            const int grp = min(k / a.group_size, a.n_groups - 1);
            s_lo = __ldg(sz_lo + grp), s_hi = __ldg(sz_hi + grp);
          }
          uint32_t af[8];
          qdev::chunk_fragments<F>(w0, u, qdev::zero_pair(s_lo), qdev::zero_pair(s_hi), af);
          const float f_lo = qdev::scale_of(s_lo, F), f_hi = qdev::scale_of(s_hi, F);
#pragma unroll
          for (int j = 0; j < NT; ++j) {
            uint4 xv = make_uint4(0, 0, 0, 0);
            if (live[j] && k + 8 * t < a.in) xv = __ldg(reinterpret_cast<const uint4*>(xr[j] + k));
            qdev::chunk_product<PB>(c[j], cb[j], af, xv, f_lo, f_hi);
          }
        }
        if constexpr (PB)
          qdev::block_scaled(c, cb, qdev::scale_of(s_lo, F), qdev::scale_of(s_hi, F));
        w0 = w1;
      }
    }
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) red[warp][j][lane][i] = c[j][i];
    __syncthreads();
    if (warp == 0) {
#pragma unroll
      for (int j = 0; j < NT; ++j) {
#pragma unroll
        for (int w = 1; w < kWarps; ++w)
#pragma unroll
          for (int i = 0; i < 4; ++i) c[j][i] += red[w][j][lane][i];
            // c[j][0..1]: W row lo, tokens 2t, 2t + 1 of n-tile j; c[j][2..3]: row hi
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int pa = p0 + 8 * j + 2 * t + h;
          if (pa >= n) continue;
          const int64_t p = off + pa;
          if (a.swiglu) {
            const int half = a.out / 2, i = blockIdx.x * 8 + g;
            float gate = c[j][h], up = c[j][2 + h];
            if (a.norm.ss) {  // x rows were x_res * w: the products times the row's 1 / RMS
              const float rs = rsqrtf(a.norm.ss[a.r.rows[p]] / float(a.norm.dim) + a.norm.eps);
              gate *= rs, up *= rs;
            }
            if (i < half)
              a.act[p * half + i] = __float2bfloat16(gate / (1.0f + __expf(-gate)) * up);
          } else {
            const int r0 = blockIdx.x * 16 + g;
            if (r0 < a.out) a.y[p * a.out + r0] = c[j][h];
            if (r0 + 8 < a.out) a.y[p * a.out + r0 + 8] = c[j][2 + h];
          }
        }
      }
    }
    __syncthreads();  // red is rewritten by the next pass
  }
}

// ---- combine ----
//
// Grid (T, column blocks of kCombineThreads): a thread sums one column h of its row over the k
// choices. The row's assignment positions and weights are read once into shared memory, so the
// k reads of y are independent loads in flight together (a chain of dependent loads per choice
// cost ~30 us per layer at one row); the sum keeps ascending expert order.
constexpr int kCombineThreads = 256;

struct RowChoices {
  int64_t pos[kMoeMaxTopK];
  float w[kMoeMaxTopK];
};

// Row t's k (assignment position, weight) pairs into `rc` (shared); the caller syncs.
__device__ __forceinline__ void load_choices(const MoeRoute& r, int t, int k, RowChoices& rc) {
  if (threadIdx.x < k) {
    rc.pos[threadIdx.x] = r.assign[int64_t(t) * k + threadIdx.x];
    rc.w[threadIdx.x] = r.weight[int64_t(t) * k + threadIdx.x];
  }
}

// sum_j w_j y[pos_j][h], j ascending (fp32).
__device__ __forceinline__ float combine_column(const float* y, const RowChoices& rc, int k, int H,
                                                int h) {
  float v[kMoeMaxTopK];
#pragma unroll
  for (int j = 0; j < kMoeMaxTopK; ++j)
    if (j < k) v[j] = y[rc.pos[j] * H + h];
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < kMoeMaxTopK; ++j)
    if (j < k) s += rc.w[j] * v[j];
  return s;
}

__global__ void __launch_bounds__(kCombineThreads)
    moe_combine_kernel(const float* y, MoeRoute r, bf16* out, int H, int k) {
  __shared__ RowChoices rc;
  const int t = blockIdx.x;
  pdl_wait();
  pdl_launch_dependents();
  load_choices(r, t, k, rc);
  __syncthreads();
  for (int h = blockIdx.y * kCombineThreads + threadIdx.x; h < H; h += gridDim.y * kCombineThreads)
    out[int64_t(t) * H + h] = __float2bfloat16(combine_column(y, rc, k, H, h));
}

template <int F, bool PB>
void launch_experts_as(const MoeArgs& a, dim3 grid, int64_t T, cudaStream_t stream) {
  // rows per expert <= T (a row chooses an expert at most once)
  if (T <= 8)
    launch_pdl(moe_mma_kernel<F, PB, 1>, grid, dim3(kWarps * 32), 0, stream, a);
  else if (T <= 16)
    launch_pdl(moe_mma_kernel<F, PB, 2>, grid, dim3(kWarps * 32), 0, stream, a);
  else
    launch_pdl(moe_mma_kernel<F, PB, 4>, grid, dim3(kWarps * 32), 0, stream, a);
}

// s = bf16(the combined column), then the producer side of the fused RMSNorm (skinny_gemm.h
// SkinnyResidualOut): x += s, xw = bf16(x w); each CTA adds its columns' sum of x^2 to ss[t]
// (atomically, as the skinny kernel's residual epilogue does); ss_zero[t] = 0.
__global__ void __launch_bounds__(kCombineThreads)
    moe_combine_residual_kernel(const float* y, MoeRoute r, SkinnyResidualOut res, bf16* xw, int H,
                                int k) {
  __shared__ RowChoices rc;
  __shared__ float part[kCombineThreads / 32];
  const int t = blockIdx.x;
  pdl_wait();
  pdl_launch_dependents();
  load_choices(r, t, k, rc);
  __syncthreads();
  float sq = 0.0f;
  for (int h = blockIdx.y * kCombineThreads + threadIdx.x; h < H;
       h += gridDim.y * kCombineThreads) {
    const float s = combine_column(y, rc, k, H, h);
    float* xp = res.x + int64_t(t) * H + h;
    const float xn = *xp + __bfloat162float(__float2bfloat16(s));
    *xp = xn;
    xw[int64_t(t) * H + h] = __float2bfloat16(xn * __bfloat162float(res.w_norm[h]));
    sq += xn * xn;
  }
#pragma unroll
  for (int d = 16; d > 0; d /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, d);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x / 32] = sq;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < kCombineThreads / 32; ++w) total += part[w];
    atomicAdd(res.ss + t, total);
    if (blockIdx.y == 0) res.ss_zero[t] = 0.0f;
  }
}

// Column blocks of the combine kernels for rows of H columns.
dim3 combine_grid(int64_t T, int64_t H) {
  return dim3(static_cast<unsigned>(T),
              static_cast<unsigned>((H + kCombineThreads - 1) / kCombineThreads));
}

// W: the experts' weights when quantized (a.W null), else null.
void launch_experts(MoeArgs a, const QuantWeight* W, int64_t T, int64_t E, int64_t k, int64_t tiles,
                    cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(moe_max_active(T, E, k)));
  if (!W) return launch_experts_as<kDense, false>(a, grid, T, stream);
  HOGWILD_CUDA_REQUIRE(W->out == E * a.out && W->in == a.in && W->perm == nullptr &&
                       W->group_size % 32 == 0 &&
                       (W->format == WeightFormat::int4 || W->format == WeightFormat::fp8));
  a.qw = W->w;
  a.qsz = W->sz;
  a.group_size = static_cast<int>(W->group_size);
  a.n_groups = static_cast<int>(W->n_groups);
  a.words_per_row =
      static_cast<int>((W->in + 127) / 128 * (W->format == WeightFormat::int4 ? 16 : 32));
  const bool pb = W->group_size % 128 == 0;
  constexpr int kInt4 = int(WeightFormat::int4), kFp8 = int(WeightFormat::fp8);
  if (W->format == WeightFormat::int4)
    (pb ? launch_experts_as<kInt4, true> : launch_experts_as<kInt4, false>)(a, grid, T, stream);
  else
    (pb ? launch_experts_as<kFp8, true> : launch_experts_as<kFp8, false>)(a, grid, T, stream);
}

int64_t align16(int64_t b) { return (b + 15) / 16 * 16; }

}  // namespace

int64_t moe_max_active(int64_t T, int64_t E, int64_t k) { return T * k < E ? T * k : E; }

int64_t moe_route_bytes(int64_t max_rows, int64_t E, int64_t k) {
  const int64_t tk = max_rows * k;
  return 4 * align16(4 * tk) + 3 * align16(4 * E) + 16;
}

MoeRoute moe_route_view(void* mem, int64_t max_rows, int64_t E, int64_t k) {
  char* p = static_cast<char*>(mem);
  const int64_t tk = align16(4 * max_rows * k), e = align16(4 * E);
  MoeRoute r;
  r.expert = reinterpret_cast<int32_t*>(p);
  r.weight = reinterpret_cast<float*>(p + tk);
  r.assign = reinterpret_cast<int32_t*>(p + 2 * tk);
  r.rows = reinterpret_cast<int32_t*>(p + 3 * tk);
  r.active = reinterpret_cast<int32_t*>(p + 4 * tk);
  r.counts = reinterpret_cast<int32_t*>(p + 4 * tk + e);
  r.offsets = reinterpret_cast<int32_t*>(p + 4 * tk + 2 * e);
  r.n_active = reinterpret_cast<int32_t*>(p + 4 * tk + 3 * e);
  return r;
}

void moe_route(const float* logits, int64_t T, int64_t E, int64_t k, bool norm_topk_prob,
               const MoeRoute& r, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(T >= 1 && E >= 1 && E <= kMoeMaxExperts && k >= 1 && k <= E &&
                       k <= kMoeMaxTopK && T * k < (int64_t(1) << 31));
  const bool few = T <= 8 && E <= kRouteThreadsFew;
  launch_pdl(few ? moe_route_kernel<kRouteThreadsFew> : moe_route_kernel<kRouteThreads>, dim3(1),
             dim3(few ? kRouteThreadsFew : kRouteThreads), 0, stream, logits, static_cast<int>(T),
             static_cast<int>(E), static_cast<int>(k), norm_topk_prob, r);
}

void moe_expert_swiglu(const bf16* x, const bf16* W_gate_up, const MoeRoute& r, bf16* act,
                       int64_t T, int64_t H, int64_t I, int64_t E, int64_t k, cudaStream_t stream,
                       const SkinnyNormIn& norm) {
  HOGWILD_CUDA_REQUIRE(H % 8 == 0 && I >= 1 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(W_gate_up) % 16 == 0);
  HOGWILD_CUDA_REQUIRE(norm.ss == nullptr || (norm.dim == H && norm.eps >= 0.0f));
  MoeArgs a{};
  a.x = x, a.W = W_gate_up, a.act = act, a.r = r, a.norm = norm;
  a.in = static_cast<int>(H), a.out = static_cast<int>(2 * I), a.swiglu = true;
  launch_experts(a, nullptr, T, E, k, (I + 7) / 8, stream);
}

void moe_expert_down(const bf16* act, const bf16* W_down, const MoeRoute& r, float* y, int64_t T,
                     int64_t H, int64_t I, int64_t E, int64_t k, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(I % 8 == 0 && H >= 1 && reinterpret_cast<uintptr_t>(act) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(W_down) % 16 == 0);
  MoeArgs a{};
  a.x = act, a.W = W_down, a.y = y, a.r = r;
  a.in = static_cast<int>(I), a.out = static_cast<int>(H), a.swiglu = false;
  launch_experts(a, nullptr, T, E, k, (H + 15) / 16, stream);
}

void moe_expert_swiglu(const bf16* x, const QuantWeight& W_gate_up, const MoeRoute& r, bf16* act,
                       int64_t T, int64_t H, int64_t I, int64_t E, int64_t k, cudaStream_t stream,
                       const SkinnyNormIn& norm) {
  HOGWILD_CUDA_REQUIRE(H % 8 == 0 && I >= 1 && reinterpret_cast<uintptr_t>(x) % 16 == 0);
  HOGWILD_CUDA_REQUIRE(norm.ss == nullptr || (norm.dim == H && norm.eps >= 0.0f));
  MoeArgs a{};
  a.x = x, a.act = act, a.r = r, a.norm = norm;
  a.in = static_cast<int>(H), a.out = static_cast<int>(2 * I), a.swiglu = true;
  launch_experts(a, &W_gate_up, T, E, k, (I + 7) / 8, stream);
}

void moe_expert_down(const bf16* act, const QuantWeight& W_down, const MoeRoute& r, float* y,
                     int64_t T, int64_t H, int64_t I, int64_t E, int64_t k, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(I % 8 == 0 && H >= 1 && reinterpret_cast<uintptr_t>(act) % 16 == 0);
  MoeArgs a{};
  a.x = act, a.y = y, a.r = r;
  a.in = static_cast<int>(I), a.out = static_cast<int>(H), a.swiglu = false;
  launch_experts(a, &W_down, T, E, k, (H + 15) / 16, stream);
}

void moe_combine_residual(const float* y, const MoeRoute& r, int64_t T, int64_t H, int64_t k,
                          const SkinnyResidualOut& res, bf16* xw, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(res.x && res.w_norm && res.ss && res.ss_zero && res.ss != res.ss_zero && xw);
  launch_pdl(moe_combine_residual_kernel, combine_grid(T, H), dim3(kCombineThreads), 0, stream, y,
             r, res, xw, static_cast<int>(H), static_cast<int>(k));
}

void moe_combine(const float* y, const MoeRoute& r, bf16* out, int64_t T, int64_t H, int64_t k,
                 cudaStream_t stream) {
  launch_pdl(moe_combine_kernel, combine_grid(T, H), dim3(kCombineThreads), 0, stream, y, r, out,
             static_cast<int>(H), static_cast<int>(k));
}

}  // namespace hogwild::cuda
