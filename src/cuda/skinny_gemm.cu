// Skinny linear kernels (skinny_gemm.h). Kernels first, launchers second.
//
// Layout of one CTA: 16 W rows (one mma M tile) x all token rows (the N side, <= 8), the K range
// split over kWarps warps in steps of kStepK. In a step, lane (g = lane / 4, t = lane % 4) loads,
// for u < kU, 16 contiguous bytes (8 k) of W rows g and g + 8 and of x row g at
// k = step * kStepK + 32 u + 8 t, and feeds them to two mma.sync m16n8k16 as they are: the
// fragments' k order is a permutation of the 32-wide chunk (physical elements 0-3 of the lane act
// as logical k {2t, 2t+1, 2t+8, 2t+9} of the first mma, elements 4-7 of the second), the same
// permutation for A (W) and B (x), so the dot products are unchanged. The warps' partial sums are
// added in shared memory.
#include <atomic>
#include <map>
#include <mutex>
#include <utility>

#include "cuda/mma.cuh"
#include "cuda/pdl.cuh"
#include "cuda/quant_dequant.cuh"
#include "cuda/quant_gemm.h"
#include "cuda/quant_tile.cuh"
#include "cuda/skinny_gemm.h"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kWarps = 4;        // per CTA, splitting K
constexpr int kU = 4;            // 16-byte W loads per row per lane per step
constexpr int kStepK = 32 * kU;  // k per warp step

// Split-K (grid.y > 1): the K steps of a tile are cut into gridDim.y CTAs. On compute capability
// >= 9.0 they form a cluster and split 0 adds the others' sums from its shared memory
// (skinny_cluster_split). Otherwise each writes its sums here, and the CTA that finishes last (a
// counter per tile) adds them, resets the counter and runs the epilogue. Either way the sums are
// added in split order (deterministic, the same bits). Global scratch: launches using it must not
// run concurrently on two streams (the backend has one stream).
constexpr int kMaxSplits = 8;
constexpr int kMaxSplitTiles = 1024;
__device__ float g_split_part[kMaxSplitTiles * kMaxSplits * 128];
__device__ unsigned g_split_count[kMaxSplitTiles];

enum Mode : int { kOutBf16 = 0, kOutF32 = 1, kSwiglu = 2, kResidual = 3 };

struct SkinnyArgs {
  const bf16* x;     // (n_rows, in)
  const bf16* W;     // (out, in)
  const bf16* bias;  // (out) or null
  bf16* y;           // (n_rows, out) bf16, or (n_rows, out / 2) for kSwiglu
  float* y_f32;      // (n_rows, out) fp32
  int n_rows, in, out, mode;
  SkinnyNormIn norm;      // ss == null: no scaling
  SkinnyResidualOut res;  // kResidual
  bool cluster_split;     // split-K CTAs of a tile form a cluster (grid.y = cluster size)
  // Quantized W (skinny_quant_kernel; W is then null): QuantWeight's w and sz, group size, groups
  // per row and words per row (quant_gemm.h).
  const uint32_t* qw;
  const uint32_t* qsz;
  int group_size, n_groups, words_per_row;
};

// W row of fragment row j (0..15) of this CTA, clamped into the matrix (clamped rows are computed
// and discarded). kSwiglu: rows 0-7 are gate features i0 + j, rows 8-15 the matching up features.
__device__ __forceinline__ int64_t w_row(const SkinnyArgs& a, int j) {
  if (a.mode == kSwiglu) {
    const int half = a.out / 2;
    const int i = min(int(blockIdx.x) * 8 + (j & 7), half - 1);
    return j < 8 ? i : half + i;
  }
  return min(int(blockIdx.x) * 16 + j, a.out - 1);
}

__device__ __forceinline__ void load_step(const SkinnyArgs& a, const bf16* w_lo, const bf16* w_hi,
                                          int step, int t, uint4 (&lo)[kU], uint4 (&hi)[kU]) {
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int k = step * kStepK + 32 * u;
    if (k + 8 * t < a.in) {
      lo[u] = ld_stream(w_lo + k);
      hi[u] = ld_stream(w_hi + k);
    } else {
      lo[u] = hi[u] = make_uint4(0, 0, 0, 0);
    }
  }
}

// x of one step, loaded a step ahead like W (an L2 round trip per step would stall the warp).
__device__ __forceinline__ void load_x(const SkinnyArgs& a, const bf16* xr, bool x_live, int step,
                                       int t, uint4 (&xv)[kU]) {
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int k = step * kStepK + 32 * u;
    xv[u] = make_uint4(0, 0, 0, 0);
    if (x_live && k + 8 * t < a.in) xv[u] = __ldg(reinterpret_cast<const uint4*>(xr + k));
  }
}

__device__ __forceinline__ void mma_step(const uint4 (&lo)[kU], const uint4 (&hi)[kU],
                                         const uint4 (&xv)[kU], float c[4]) {
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    mma_bf16(c, lo[u].x, hi[u].x, lo[u].y, hi[u].y, xv[u].x, xv[u].y);
    mma_bf16(c, lo[u].z, hi[u].z, lo[u].w, hi[u].w, xv[u].z, xv[u].w);
  }
}

__device__ __forceinline__ void prefetch_l1(const void* p) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
}

// Lines the epilogue of this CTA's tile reads: constants (the next norm's weight, the bias) or,
// written_before (after pdl_wait), what earlier kernels wrote (the residual rows, the sums of
// squares). One line per lane.
__device__ __forceinline__ void prefetch_epilogue(const SkinnyArgs& a, int lane,
                                                  bool written_before) {
  const int row0 = blockIdx.x * 16;
  if (!written_before) {
    if (a.mode == kResidual && lane == 8) prefetch_l1(a.res.w_norm + row0);
    if (a.bias && lane == 9) prefetch_l1(a.bias + row0);
    return;
  }
  if (a.mode == kResidual && lane < a.n_rows) prefetch_l1(a.res.x + int64_t(lane) * a.out + row0);
  if (a.norm.ss && lane == 8) prefetch_l1(a.norm.ss);
}

// The end of a tile, after every warp has its fp32 sums c of the mma fragment (c[0], c[1]: W row
// g, tokens 2t, 2t + 1; c[2], c[3]: W row g + 8): the warps' sums added in shared memory, the
// split-K CTAs merged, then the epilogue of a.mode. Shared by the bf16 and the quantized kernels.
__device__ __forceinline__ void finish_tile(const SkinnyArgs& a, float (&c)[4], int warp,
                                            int lane) {
  __shared__ float red[kWarps][32][4];
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int i = 0; i < 4; ++i) red[warp][lane][i] = c[i];
  __syncthreads();
  // Set where the cluster merged the splits. Code compiled for an older architecture (the
  // compute_80 PTX, JIT-compiled on a GPU the sm_90a code does not run on) has no cluster path
  // and merges through global memory even when launched as a cluster.
  bool merged = false;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (a.cluster_split) {
    // The tile's splits are one cluster: each sends its sums to split 0's shared memory
    // (distributed shared memory) and arrives at the cluster barrier; split 0 waits, then adds
    // them in split order. No global round trip, fence or counter (those cost ~0.1 ms per
    // Qwen3-8B step at 1 row, docs/PERFLOG.md c785e9f).
    __shared__ float4 xsplit[kMaxSplits][32];
    if (warp == 0) {
#pragma unroll
      for (int w = 1; w < kWarps; ++w)
#pragma unroll
        for (int i = 0; i < 4; ++i) c[i] += red[w][lane][i];
      if (blockIdx.y != 0) {
        const unsigned local = unsigned(__cvta_generic_to_shared(&xsplit[blockIdx.y][lane]));
        unsigned remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(0));
        asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(remote), "f"(c[0]),
                     "f"(c[1]), "f"(c[2]), "f"(c[3])
                     : "memory");
      }
    }
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    if (blockIdx.y != 0) return;
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (warp != 0) return;
    for (unsigned sp = 1; sp < gridDim.y; ++sp) {
      const float4 v = xsplit[sp][lane];
      c[0] += v.x, c[1] += v.y, c[2] += v.z, c[3] += v.w;
    }
    merged = true;
  } else
#endif
  {
    if (warp != 0) return;
#pragma unroll
    for (int w = 1; w < kWarps; ++w)
#pragma unroll
      for (int i = 0; i < 4; ++i) c[i] += red[w][lane][i];
  }
  if (gridDim.y > 1 && !merged) {
    float* part = g_split_part + (int64_t(blockIdx.x) * kMaxSplits + blockIdx.y) * 128 + lane * 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) part[i] = c[i];
    __threadfence();
    unsigned prev = 0;
    if (lane == 0) prev = atomicAdd(&g_split_count[blockIdx.x], 1u);
    prev = __shfl_sync(0xffffffffu, prev, 0);
    if (prev != gridDim.y - 1) return;
    __threadfence();
    const float* base = g_split_part + int64_t(blockIdx.x) * kMaxSplits * 128 + lane * 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) c[i] = 0.0f;
    for (unsigned sp = 0; sp < gridDim.y; ++sp)
#pragma unroll
      for (int i = 0; i < 4; ++i) c[i] += __ldcg(base + sp * 128 + i);
    if (lane == 0) g_split_count[blockIdx.x] = 0;
  }

  // c[0], c[1]: W row g, tokens 2t, 2t + 1; c[2], c[3]: W row g + 8, same tokens.
  if (a.norm.ss) {  // rows of x were x_res * w (not yet divided by their RMS): scale the products
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = min(2 * t + h, a.n_rows - 1);
      const float r = rsqrtf(a.norm.ss[n] / float(a.norm.dim) + a.norm.eps);
      c[h] *= r;
      c[2 + h] *= r;
    }
  }
  if (a.mode == kResidual) {
    if (blockIdx.x == 0 && lane < a.n_rows) a.res.ss_zero[lane] = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = 2 * t + h;
      float sq = 0.0f;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int row = blockIdx.x * 16 + g + 8 * j;
        if (n < a.n_rows && row < a.out) {
          float* xp = a.res.x + int64_t(n) * a.out + row;
          const float xn = *xp + __bfloat162float(__float2bfloat16(c[2 * j + h]));
          *xp = xn;
          a.y[int64_t(n) * a.out + row] =
              __float2bfloat16(xn * __bfloat162float(a.res.w_norm[row]));
          sq += xn * xn;
        }
      }
      sq += __shfl_xor_sync(0xffffffffu, sq, 4);
      sq += __shfl_xor_sync(0xffffffffu, sq, 8);
      sq += __shfl_xor_sync(0xffffffffu, sq, 16);
      if (g == 0 && n < a.n_rows) atomicAdd(a.res.ss + n, sq);
    }
    return;
  }
  for (int h = 0; h < 2; ++h) {
    const int n = 2 * t + h;
    if (n >= a.n_rows) break;
    if (a.mode == kSwiglu) {
      const int half = a.out / 2, i = blockIdx.x * 8 + g;
      const float gate = c[h], up = c[2 + h];
      if (i < half)
        a.y[int64_t(n) * half + i] = __float2bfloat16(gate / (1.0f + __expf(-gate)) * up);
      continue;
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int row = blockIdx.x * 16 + g + 8 * j;
      if (row >= a.out) continue;
      float v = c[2 * j + h];
      if (a.bias) v += __bfloat162float(a.bias[row]);
      if (a.mode == kOutF32)
        a.y_f32[int64_t(n) * a.out + row] = v;
      else
        a.y[int64_t(n) * a.out + row] = __float2bfloat16(v);
    }
  }
}

// grid ceil(out / 16) (kSwiglu: ceil(out / 2 / 8)), kWarps * 32 threads.
__global__ void __launch_bounds__(kWarps * 32) skinny_mma_kernel(SkinnyArgs a) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const bf16* w_lo = a.W + w_row(a, g) * a.in + 8 * t;
  const bf16* w_hi = a.W + w_row(a, g + 8) * a.in + 8 * t;
  const bool x_live = g < a.n_rows;
  const bf16* xr = a.x + int64_t(x_live ? g : 0) * a.in + 8 * t;
  const int all_steps = (a.in + kStepK - 1) / kStepK;
  const int per_split = (all_steps + gridDim.y - 1) / gridDim.y;
  const int s_begin = blockIdx.y * per_split;
  const int n_steps = min(all_steps, s_begin + per_split);  // this CTA: steps [s_begin, n_steps)

  // Weights do not depend on earlier kernels: the first two steps' loads are issued before
  // pdl_wait, so they overlap the previous kernel's tail. (A bulk L2 prefetch of more of the
  // CTA's rows here measured slower: 5.03 vs 4.88 ms per Qwen3-8B step.) Then one step in flight
  // while the other is multiplied.
  uint4 lo0[kU], hi0[kU], lo1[kU], hi1[kU], x0[kU], x1[kU];
  int s = s_begin + warp;
  if (s < n_steps) load_step(a, w_lo, w_hi, s, t, lo0, hi0);
  if (s + kWarps < n_steps) load_step(a, w_lo, w_hi, s + kWarps, t, lo1, hi1);
  // The epilogue's few reads (the norm weight or bias, after the wait the residual rows and the
  // sums of squares) are prefetched to L1 now, so that the tile's end does not wait on an HBM or
  // L2 round trip.
  if (warp == 0) prefetch_epilogue(a, lane, false);
  pdl_wait();
  pdl_launch_dependents();
  if (warp == 0) prefetch_epilogue(a, lane, true);
  if (s < n_steps) load_x(a, xr, x_live, s, t, x0);
  if (s + kWarps < n_steps) load_x(a, xr, x_live, s + kWarps, t, x1);

  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (; s < n_steps; s += 2 * kWarps) {
    mma_step(lo0, hi0, x0, c);
    if (s + 2 * kWarps < n_steps) {
      load_step(a, w_lo, w_hi, s + 2 * kWarps, t, lo0, hi0);
      load_x(a, xr, x_live, s + 2 * kWarps, t, x0);
    }
    if (s + kWarps >= n_steps) break;
    mma_step(lo1, hi1, x1, c);
    if (s + 3 * kWarps < n_steps) {
      load_step(a, w_lo, w_hi, s + 3 * kWarps, t, lo1, hi1);
      load_x(a, xr, x_live, s + 3 * kWarps, t, x1);
    }
  }
  finish_tile(a, c, warp, lane);
}

// The same tile over a quantized W (quant_gemm.h QuantWeight, quant_dequant.cuh): a warp step is
// one 128-k block, whose packed words are 4x (int4) or 2x (fp8) fewer bytes than bf16 ones, so
// kQStages blocks per warp are in flight (the same registers as the bf16 kernel's two steps). x
// and the scales of a block are loaded one block ahead. A block's fp32 product is multiplied by
// its rows' group scales (PB: groups of whole blocks, one scale per block; else per 32-k chunk).
template <int F>
inline constexpr int kQStages = F == int(WeightFormat::int4) ? 8 : 4;

template <int F, bool PB>
__global__ void __launch_bounds__(kWarps * 32) skinny_quant_kernel(SkinnyArgs a) {
  constexpr int S = kQStages<F>;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int64_t r_lo = w_row(a, g), r_hi = w_row(a, g + 8);
  const uint32_t* w_lo = a.qw + r_lo * a.words_per_row;
  const uint32_t* w_hi = a.qw + r_hi * a.words_per_row;
  const uint32_t* sz_lo = a.qsz + r_lo * a.n_groups;
  const uint32_t* sz_hi = a.qsz + r_hi * a.n_groups;
  const bool x_live = g < a.n_rows;
  const bf16* xr = a.x + int64_t(x_live ? g : 0) * a.in + 8 * t;
  const int all_blocks = (a.in + kStepK - 1) / kStepK;
  const int per_split = (all_blocks + gridDim.y - 1) / gridDim.y;
  const int b_begin = blockIdx.y * per_split;
  const int b_end = min(all_blocks, b_begin + per_split);  // this CTA: blocks [b_begin, b_end)

  qdev::WBlock<F> buf[S];
#pragma unroll
  for (int i = 0; i < S; ++i)
    if (b_begin + warp + i * kWarps < b_end)
      qdev::load_block<F>(w_lo, w_hi, b_begin + warp + i * kWarps, t, buf[i]);
  auto load_sz = [&](int b, uint32_t(&sv)[4][2]) {
#pragma unroll
    for (int u = 0; u < (PB ? 1 : 4); ++u) {
      const int grp = min((b * kStepK + 32 * u) / a.group_size, a.n_groups - 1);
      sv[u][0] = b < b_end ? __ldg(sz_lo + grp) : 0u;
      sv[u][1] = b < b_end ? __ldg(sz_hi + grp) : 0u;
    }
  };
  uint32_t sn[4][2];
  load_sz(b_begin + warp, sn);
  if (warp == 0) prefetch_epilogue(a, lane, false);
  pdl_wait();
  pdl_launch_dependents();
  if (warp == 0) prefetch_epilogue(a, lane, true);
  uint4 xn[kU];
  if (b_begin + warp < b_end) load_x(a, xr, x_live, b_begin + warp, t, xn);

  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int base = b_begin + warp; base < b_end; base += S * kWarps) {
#pragma unroll
    for (int i = 0; i < S; ++i) {
      const int b = base + i * kWarps;
      if (b >= b_end) break;
      uint4 xv[kU];
      uint32_t sv[4][2];
#pragma unroll
      for (int u = 0; u < kU; ++u) xv[u] = xn[u];
#pragma unroll
      for (int u = 0; u < (PB ? 1 : 4); ++u) sv[u][0] = sn[u][0], sv[u][1] = sn[u][1];
      if (b + kWarps < b_end) {
        load_x(a, xr, x_live, b + kWarps, t, xn);
        load_sz(b + kWarps, sn);
      }
      float cb[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // PB: the block's product before its scale
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint32_t s_lo = sv[PB ? 0 : u][0], s_hi = sv[PB ? 0 : u][1];
        uint32_t af[8];
        qdev::chunk_fragments<F>(buf[i], u, qdev::zero_pair(s_lo), qdev::zero_pair(s_hi), af);
        if constexpr (PB) {
          mma_bf16(cb, af[0], af[1], af[2], af[3], xv[u].x, xv[u].y);
          mma_bf16(cb, af[4], af[5], af[6], af[7], xv[u].z, xv[u].w);
        } else {
          const float f_lo = qdev::scale_of(s_lo, F), f_hi = qdev::scale_of(s_hi, F);
          float cu[4] = {0.0f, 0.0f, 0.0f, 0.0f};
          mma_bf16(cu, af[0], af[1], af[2], af[3], xv[u].x, xv[u].y);
          mma_bf16(cu, af[4], af[5], af[6], af[7], xv[u].z, xv[u].w);
          c[0] += cu[0] * f_lo, c[1] += cu[1] * f_lo, c[2] += cu[2] * f_hi, c[3] += cu[3] * f_hi;
        }
      }
      if constexpr (PB) {
        const float f_lo = qdev::scale_of(sv[0][0], F), f_hi = qdev::scale_of(sv[0][1], F);
        c[0] += cb[0] * f_lo, c[1] += cb[1] * f_lo, c[2] += cb[2] * f_hi, c[3] += cb[3] * f_hi;
      }
      if (b + S * kWarps < b_end) qdev::load_block<F>(w_lo, w_hi, b + S * kWarps, t, buf[i]);
    }
  }
  finish_tile(a, c, warp, lane);
}

// The same tile over a quantized W with the K loop of quant_tile.cuh (x and the scales of a round
// in shared memory, kStages packed blocks per warp in flight), then finish_tile as above. Faster
// than skinny_quant_kernel where a round's copy of x is small (fp8; int4 at one row), slower where
// the copy of 8 token rows delays the first product (docs/PERFLOG.md).
template <int F, bool PB>
__global__ void __launch_bounds__(kWarps * 32) skinny_quant_round_kernel(SkinnyArgs a) {
  extern __shared__ __align__(16) unsigned char qsmem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  struct Src {
    const SkinnyArgs& a;
    __device__ const uint32_t* w(int j) const { return a.qw + w_row(a, j) * a.words_per_row; }
    __device__ const uint32_t* sz(int j) const { return a.qsz + w_row(a, j) * a.n_groups; }
    __device__ const bf16* x(int n) const { return a.x + int64_t(n) * a.in; }
  } src{a};
  const int all_blocks = (a.in + kStepK - 1) / kStepK;
  const int per_split = (all_blocks + gridDim.y - 1) / gridDim.y;
  const int b_begin = blockIdx.y * per_split;
  const int b_end = min(all_blocks, b_begin + per_split);  // this CTA: blocks [b_begin, b_end)
  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  qtile::product<F, PB>(src, a.n_rows, a.in, a.group_size, b_begin, b_end, qsmem, c, [&] {
    if (warp == 0) prefetch_epilogue(a, lane, false);
    pdl_wait();
    pdl_launch_dependents();
    if (warp == 0) prefetch_epilogue(a, lane, true);
  });
  finish_tile(a, c, warp, lane);
}

// CTAs of `kernel` resident at once on the device (kWarps * 32 threads, smem bytes of dynamic
// shared memory each).
template <typename Kernel>
int resident_ctas(Kernel kernel, size_t smem = 0) {
  int dev = 0, sms = 0, per_sm = 0;
  HOGWILD_CUDA_CHECK(cudaGetDevice(&dev));
  HOGWILD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  HOGWILD_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWarps * 32, smem));
  return sms * per_sm;
}

// Split-K factor: a tile's CTA streams at a rate set by its loads in flight, so a grid that cannot
// fill the resident slots once runs below the roofline (QwQ-32B down_proj: 320 tiles on 528 slots,
// 2984 GB/s against cuBLAS's 3868; split 5 ways: 3837). For such grids (< 70% of the slots), picks
// the split (<= kMaxSplits, >= 2 steps per warp) whose CTA count wastes the least of the last
// wave. Larger grids stay unsplit (Qwen3-8B qkv, 384 tiles: 16.2 us unsplit, 17.9 split 4 ways).
// slots: the kernel's resident CTAs (resident_ctas).
int choose_splits(int64_t tiles, int64_t in, int64_t slots) {
  const int64_t steps = (in + kStepK - 1) / kStepK;
  if (tiles > kMaxSplitTiles || tiles * 10 >= slots * 7) return 1;
  int best = 1;
  double best_eff = 0.0;
  for (int s = 1; s <= kMaxSplits; ++s) {
    if (s > 1 && steps / (int64_t(s) * kWarps) < 2) break;
    const int64_t ctas = tiles * s, waves = (ctas + slots - 1) / slots;
    const double eff = double(ctas) / double(waves * slots);
    if (eff > best_eff + 0.02) best = s, best_eff = eff;
  }
  return best;
}

template <typename Kernel>
void launch_kernel(Kernel kernel, int64_t slots, SkinnyArgs a, int64_t tiles, cudaStream_t stream,
                   size_t smem = 0) {
  const int splits = choose_splits(tiles, a.in, slots);
  // the splits of a tile form a cluster (splits <= kMaxSplits = 8, the portable cluster size)
  a.cluster_split = splits > 1 && skinny_cluster_split();
  launch_pdl_clusters(kernel, dim3(static_cast<unsigned>(tiles), splits), dim3(kWarps * 32),
                      dim3(1, a.cluster_split ? splits : 1, 1), smem, stream, a);
}

void launch(SkinnyArgs a, int64_t tiles, cudaStream_t stream) {
  static const int slots = resident_ctas(skinny_mma_kernel);
  launch_kernel(skinny_mma_kernel, slots, a, tiles, stream);
}

// The round kernel's shared memory depends on the rows and the group size; resident CTAs are
// counted once per (rows, group size) seen (a model has a handful).
template <int F, bool PB>
void launch_quant_as(const SkinnyArgs& a, int64_t tiles, cudaStream_t stream) {
  if (F == int(WeightFormat::int4) && a.n_rows > 1) {
    static const int slots = resident_ctas(skinny_quant_kernel<F, PB>);
    return launch_kernel(skinny_quant_kernel<F, PB>, slots, a, tiles, stream);
  }
  static const bool opted_in = [] {
    HOGWILD_CUDA_CHECK(cudaFuncSetAttribute(skinny_quant_round_kernel<F, PB>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            int(qtile::round_smem<F>(kSkinnyMaxRows, 32).bytes)));
    return true;
  }();
  (void)opted_in;
  static std::mutex mu;
  static std::map<std::pair<int, int>, int> slots_of;
  const size_t smem = static_cast<size_t>(qtile::round_smem<F>(a.n_rows, a.group_size).bytes);
  int slots = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto [it, fresh] = slots_of.try_emplace({a.n_rows, a.group_size}, 0);
    if (fresh) it->second = resident_ctas(skinny_quant_round_kernel<F, PB>, smem);
    slots = it->second;
  }
  launch_kernel(skinny_quant_round_kernel<F, PB>, slots, a, tiles, stream, smem);
}

// a with W's packed words; x gathered by W's act-order permutation first (into scratch).
void launch_quant(SkinnyArgs a, const QuantWeight& W, void* scratch, int64_t tiles,
                  cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(skinny_supported(a.n_rows, W.in) && W.out == a.out &&
                       (W.format == WeightFormat::int4 || W.format == WeightFormat::fp8));
  HOGWILD_CUDA_REQUIRE(W.group_size % 32 == 0 && reinterpret_cast<uintptr_t>(a.x) % 16 == 0);
  if (W.perm) a.x = gather_act_order(a.x, W, a.n_rows, scratch, stream);
  a.qw = W.w;
  a.qsz = W.sz;
  a.group_size = static_cast<int>(W.group_size);
  a.n_groups = static_cast<int>(W.n_groups);
  const int n_blocks = static_cast<int>((W.in + kStepK - 1) / kStepK);
  a.words_per_row = n_blocks * (W.format == WeightFormat::int4 ? 16 : 32);
  const bool pb = W.group_size % kStepK == 0;
  if (W.format == WeightFormat::int4)
    (pb ? launch_quant_as<int(WeightFormat::int4), true>
        : launch_quant_as<int(WeightFormat::int4), false>)(a, tiles, stream);
  else
    (pb ? launch_quant_as<int(WeightFormat::fp8), true>
        : launch_quant_as<int(WeightFormat::fp8), false>)(a, tiles, stream);
}

std::atomic<bool> g_cluster_split{true};

void check(const bf16* x, const bf16* W, int64_t n_rows, int64_t in, int64_t out) {
  HOGWILD_CUDA_REQUIRE(skinny_supported(n_rows, in) && out > 0 && out < (int64_t(1) << 31));
  HOGWILD_CUDA_REQUIRE(reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(W) % 16 == 0);
}

}  // namespace

void set_skinny_cluster_split(bool on) { g_cluster_split.store(on); }

bool skinny_cluster_split() {
  // Clusters and distributed shared memory are compute capability 9.0 features.
  return hopper_or_later() && g_cluster_split.load();
}

bool skinny_supported(int64_t n_rows, int64_t in) {
  return n_rows >= 1 && n_rows <= kSkinnyMaxRows && in % 8 == 0 && in > 0 &&
         in < (int64_t(1) << 31);
}

void skinny_linear(const bf16* x, const bf16* W, const bf16* bias, bf16* y, float* y_f32,
                   int64_t n_rows, int64_t in, int64_t out, cudaStream_t stream,
                   const SkinnyNormIn& norm) {
  check(x, W, n_rows, in, out);
  HOGWILD_CUDA_REQUIRE((y == nullptr) != (y_f32 == nullptr));
  HOGWILD_CUDA_REQUIRE(norm.ss == nullptr || (norm.dim == in && norm.eps >= 0.0f));
  SkinnyArgs a{};
  a.x = x, a.W = W, a.bias = bias, a.y = y, a.y_f32 = y_f32;
  a.n_rows = static_cast<int>(n_rows), a.in = static_cast<int>(in), a.out = static_cast<int>(out);
  a.mode = y_f32 ? kOutF32 : kOutBf16;
  a.norm = norm;
  launch(a, (out + 15) / 16, stream);
}

void skinny_swiglu(const bf16* x, const bf16* W, bf16* act, int64_t n_rows, int64_t in,
                   int64_t intermediate, cudaStream_t stream, const SkinnyNormIn& norm) {
  check(x, W, n_rows, in, 2 * intermediate);
  HOGWILD_CUDA_REQUIRE(act != nullptr && intermediate > 0);
  HOGWILD_CUDA_REQUIRE(norm.ss == nullptr || (norm.dim == in && norm.eps >= 0.0f));
  SkinnyArgs a{};
  a.x = x, a.W = W, a.y = act;
  a.n_rows = static_cast<int>(n_rows), a.in = static_cast<int>(in);
  a.out = static_cast<int>(2 * intermediate);
  a.mode = kSwiglu;
  a.norm = norm;
  launch(a, (intermediate + 7) / 8, stream);
}

void skinny_residual(const bf16* x, const bf16* W, int64_t n_rows, int64_t in, int64_t out,
                     const SkinnyResidualOut& res, bf16* xw, cudaStream_t stream) {
  check(x, W, n_rows, in, out);
  HOGWILD_CUDA_REQUIRE(res.x && res.w_norm && res.ss && res.ss_zero && res.ss != res.ss_zero && xw);
  SkinnyArgs a{};
  a.x = x, a.W = W, a.y = xw;
  a.n_rows = static_cast<int>(n_rows), a.in = static_cast<int>(in), a.out = static_cast<int>(out);
  a.mode = kResidual;
  a.res = res;
  launch(a, (out + 15) / 16, stream);
}

}  // namespace hogwild::cuda

namespace hogwild::cuda {

void skinny_quant_linear(const bf16* x, const QuantWeight& W, const bf16* bias, bf16* y,
                         int64_t n_rows, void* scratch, cudaStream_t stream,
                         const SkinnyNormIn& norm) {
  HOGWILD_CUDA_REQUIRE(y != nullptr);
  HOGWILD_CUDA_REQUIRE(norm.ss == nullptr || (norm.dim == W.in && norm.eps >= 0.0f));
  SkinnyArgs a{};
  a.x = x, a.bias = bias, a.y = y;
  a.n_rows = static_cast<int>(n_rows), a.in = static_cast<int>(W.in);
  a.out = static_cast<int>(W.out);
  a.mode = kOutBf16;
  a.norm = norm;
  launch_quant(a, W, scratch, (W.out + 15) / 16, stream);
}

void skinny_quant_swiglu(const bf16* x, const QuantWeight& W, bf16* act, int64_t n_rows,
                         void* scratch, cudaStream_t stream, const SkinnyNormIn& norm) {
  HOGWILD_CUDA_REQUIRE(act != nullptr && W.out % 2 == 0);
  HOGWILD_CUDA_REQUIRE(norm.ss == nullptr || (norm.dim == W.in && norm.eps >= 0.0f));
  SkinnyArgs a{};
  a.x = x, a.y = act;
  a.n_rows = static_cast<int>(n_rows), a.in = static_cast<int>(W.in);
  a.out = static_cast<int>(W.out);
  a.mode = kSwiglu;
  a.norm = norm;
  launch_quant(a, W, scratch, (W.out / 2 + 7) / 8, stream);
}

void skinny_quant_residual(const bf16* x, const QuantWeight& W, int64_t n_rows,
                           const SkinnyResidualOut& res, bf16* xw, void* scratch,
                           cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(res.x && res.w_norm && res.ss && res.ss_zero && res.ss != res.ss_zero && xw);
  SkinnyArgs a{};
  a.x = x, a.y = xw;
  a.n_rows = static_cast<int>(n_rows), a.in = static_cast<int>(W.in);
  a.out = static_cast<int>(W.out);
  a.mode = kResidual;
  a.res = res;
  launch_quant(a, W, scratch, (W.out + 15) / 16, stream);
}

}  // namespace hogwild::cuda
