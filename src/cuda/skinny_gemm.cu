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
#include <algorithm>
#include <atomic>

#include "cuda/pdl.cuh"
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
};

__device__ __forceinline__ uint4 ld_stream(const bf16* p) {  // read once: keep out of L1
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

__device__ __forceinline__ void mma_bf16(float c[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// W row of fragment row j (0..15) of this CTA, clamped into the matrix (clamped rows are computed
// and discarded). kSwiglu: rows 0-7 are gate features i0 + j, rows 8-15 the matching up features.
// mt: the index of the 16-row M tile over the whole matrix (the narrow kernel: its CTA index).
__device__ __forceinline__ int64_t w_row(const SkinnyArgs& a, int mt, int j) {
  if (a.mode == kSwiglu) {
    const int half = a.out / 2;
    const int i = min(mt * 8 + (j & 7), half - 1);
    return j < 8 ? i : half + i;
  }
  return min(mt * 16 + j, a.out - 1);
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

// grid ceil(out / 16) (kSwiglu: ceil(out / 2 / 8)), kWarps * 32 threads.
__global__ void __launch_bounds__(kWarps * 32) skinny_mma_kernel(SkinnyArgs a) {
  __shared__ float red[kWarps][32][4];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const bf16* w_lo = a.W + w_row(a, blockIdx.x, g) * a.in + 8 * t;
  const bf16* w_hi = a.W + w_row(a, blockIdx.x, g + 8) * a.in + 8 * t;
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
    // Qwen3-8B step at 1 row, docs/CUDA.md).
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

// ---- The wide kernel: 9 .. kSkinnyMaxRows token rows ----
//
// At more than 8 rows each weight fragment feeds several n8 tiles of rows. A CTA of kWideWarps
// warps takes 128 W rows (each warp kWideMTiles m16 tiles, its own rows) over the CTA's K range,
// W streamed into registers as in the narrow kernel (same lanes, same k permutation). x goes
// through shared memory: every step's x chunk (R rows x kWideStepK) is copied once per CTA
// (cp.async, a ring of kWideStages) and read by all warps, so x costs the L2 R / 128 of W's bytes
// (at 64 rows: half) instead of R / 16 if each 16-row tile read its own. Split-K (grids that
// cannot fill the resident slots) sums through global memory in split order (deterministic).
constexpr int kWideWarps = 4;
constexpr int kWideMTiles = 2;                                // m16 tiles per warp
constexpr int kWideTileRows = kWideWarps * kWideMTiles * 16;  // W rows per CTA
constexpr int kWideU = 2;                                     // 32-wide k chunks per step
constexpr int kWideStepK = 32 * kWideU;                       // k per step
constexpr int kWideStages = 4;                                // x ring in shared memory
constexpr int kWideMaxSplitCtas = 512;
__device__ float g_wide_part[kWideMaxSplitCtas * kWideTileRows * kSkinnyMaxRows];
__device__ unsigned g_wide_count[kWideMaxSplitCtas];

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned dst = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(gmem),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

using WideW = uint4[kWideMTiles][2][kWideU];  // [m tile][rows g / g + 8][chunk]

__device__ __forceinline__ void wide_load_w(const SkinnyArgs& a,
                                            const bf16* const (&wp)[kWideMTiles][2], int step,
                                            int t, WideW& w) {
#pragma unroll
  for (int u = 0; u < kWideU; ++u) {
    const int k = step * kWideStepK + 32 * u;
    const bool live = k + 8 * t < a.in;
#pragma unroll
    for (int m = 0; m < kWideMTiles; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        w[m][h][u] = live ? ld_stream(wp[m][h] + k) : make_uint4(0, 0, 0, 0);
  }
}

// Row r of a stage holds its 8 16-byte chunks with chunk c at c ^ 4 on odd rows, so the two rows a
// quarter-warp reads (8j + g for g = 2q, 2q + 1) fall in different halves of the 128 banks' bytes.
template <int R>
__device__ __forceinline__ void wide_load_x(const SkinnyArgs& a, uint4 (&xs)[R][8], int step) {
  for (int c = threadIdx.x; c < R * 8; c += kWideWarps * 32) {
    const int r = c >> 3, ch = c & 7, k = step * kWideStepK + 8 * ch;
    const bool valid = r < a.n_rows && k < a.in;
    cp_async16(&xs[r][ch ^ ((r & 1) << 2)], valid ? a.x + int64_t(r) * a.in + k : a.x, valid);
  }
}

// grid (ceil(m16 tiles / (kWideWarps * kWideMTiles)), splits), kWideWarps * 32 threads;
// NT n8 tiles of rows (R = 8 NT >= n_rows).
template <int NT>
__global__ void __launch_bounds__(kWideWarps * 32) skinny_wide_kernel(SkinnyArgs a) {
  constexpr int R = 8 * NT;
  __shared__ __align__(16) uint4 xs[kWideStages][R][8];
  __shared__ unsigned last_split;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int mt0 = (int(blockIdx.x) * kWideWarps + warp) * kWideMTiles;
  const bf16* wp[kWideMTiles][2];
#pragma unroll
  for (int m = 0; m < kWideMTiles; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) wp[m][h] = a.W + w_row(a, mt0 + m, g + 8 * h) * a.in + 8 * t;
  const int all_steps = (a.in + kWideStepK - 1) / kWideStepK;
  const int per_split = (all_steps + gridDim.y - 1) / gridDim.y;
  const int s_begin = blockIdx.y * per_split;
  const int n = min(all_steps, s_begin + per_split) - s_begin;  // this CTA's steps (>= 1)

  // Weights first (constant data, before pdl_wait), two steps deep; then x's ring.
  WideW w0, w1;
  if (n > 0) wide_load_w(a, wp, s_begin, t, w0);
  if (n > 1) wide_load_w(a, wp, s_begin + 1, t, w1);
  pdl_wait();
  pdl_launch_dependents();
#pragma unroll
  for (int i = 0; i < kWideStages - 1; ++i) {
    if (i < n) wide_load_x<R>(a, xs[i], s_begin + i);
    cp_async_commit();
  }
  float c[kWideMTiles][NT][4];
#pragma unroll
  for (int m = 0; m < kWideMTiles; ++m)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) c[m][j][i] = 0.0f;

  // Step i: wait for its x stage, refill the stage step i - 1 used, multiply, load W of i + 2.
  auto step = [&](int i, WideW& w) {
    cp_async_wait<kWideStages - 2>();
    __syncthreads();
    if (i + kWideStages - 1 < n)
      wide_load_x<R>(a, xs[(i + kWideStages - 1) % kWideStages], s_begin + i + kWideStages - 1);
    cp_async_commit();
    const uint4(&x)[R][8] = xs[i % kWideStages];
    // Groups of JG n8 tiles: their x loaded together, then the chunk's first k half for every
    // (tile, m) before the second, so no mma waits on the one before it (an accumulator recurs
    // every 2 JG mmas; with the halves back to back the step ran ~3x slower).
    constexpr int JG = NT < 4 ? NT : 4;
#pragma unroll
    for (int u = 0; u < kWideU; ++u)
#pragma unroll
      for (int j0 = 0; j0 < NT; j0 += JG) {
        uint4 b[JG];
#pragma unroll
        for (int jj = 0; jj < JG; ++jj) b[jj] = x[8 * (j0 + jj) + g][(4 * u + t) ^ ((g & 1) << 2)];
#pragma unroll
        for (int jj = 0; jj < JG; ++jj)
#pragma unroll
          for (int m = 0; m < kWideMTiles; ++m)
            mma_bf16(c[m][j0 + jj], w[m][0][u].x, w[m][1][u].x, w[m][0][u].y, w[m][1][u].y, b[jj].x,
                     b[jj].y);
#pragma unroll
        for (int jj = 0; jj < JG; ++jj)
#pragma unroll
          for (int m = 0; m < kWideMTiles; ++m)
            mma_bf16(c[m][j0 + jj], w[m][0][u].z, w[m][1][u].z, w[m][0][u].w, w[m][1][u].w, b[jj].z,
                     b[jj].w);
      }
    if (i + 2 < n) wide_load_w(a, wp, s_begin + i + 2, t, w);
  };
  for (int i = 0; i < n; i += 2) {
    step(i, w0);
    if (i + 1 < n) step(i + 1, w1);
  }

  if (gridDim.y > 1) {  // split-K: the last split of the tile to finish adds all in split order
    constexpr int kPart = kWideTileRows * R;
    float* part = g_wide_part + (int64_t(blockIdx.x) * gridDim.y + blockIdx.y) * kPart;
#pragma unroll
    for (int m = 0; m < kWideMTiles; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j)
        reinterpret_cast<float4*>(part)[((warp * kWideMTiles + m) * NT + j) * 32 + lane] =
            make_float4(c[m][j][0], c[m][j][1], c[m][j][2], c[m][j][3]);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last_split = atomicAdd(&g_wide_count[blockIdx.x], 1u) == gridDim.y - 1;
    __syncthreads();
    if (!last_split) return;
    __threadfence();
    const float* base = g_wide_part + int64_t(blockIdx.x) * gridDim.y * kPart;
#pragma unroll
    for (int m = 0; m < kWideMTiles; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int idx = ((warp * kWideMTiles + m) * NT + j) * 32 + lane;
        float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (unsigned sp = 0; sp < gridDim.y; ++sp) {
          const float4 v = __ldcg(reinterpret_cast<const float4*>(base + sp * kPart) + idx);
          sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
        }
        c[m][j][0] = sum.x, c[m][j][1] = sum.y, c[m][j][2] = sum.z, c[m][j][3] = sum.w;
      }
    if (threadIdx.x == 0) g_wide_count[blockIdx.x] = 0;
  }

  // Epilogue, as the narrow kernel's: c[m][j][0..1] are W row g of m tile mt0 + m for tokens
  // 8j + 2t, 8j + 2t + 1; c[m][j][2..3] W row g + 8.
  if (a.mode == kResidual && blockIdx.x == 0 && threadIdx.x < a.n_rows)
    a.res.ss_zero[threadIdx.x] = 0.0f;
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int nt = 8 * j + 2 * t + h;  // token row
      const bool live = nt < a.n_rows;
      if (a.norm.ss) {
        const float r = rsqrtf(a.norm.ss[min(nt, a.n_rows - 1)] / float(a.norm.dim) + a.norm.eps);
#pragma unroll
        for (int m = 0; m < kWideMTiles; ++m) c[m][j][h] *= r, c[m][j][2 + h] *= r;
      }
      if (a.mode == kResidual) {
        float sq = 0.0f;
#pragma unroll
        for (int m = 0; m < kWideMTiles; ++m)
#pragma unroll
          for (int hi = 0; hi < 2; ++hi) {
            const int row = (mt0 + m) * 16 + g + 8 * hi;
            if (live && row < a.out) {
              float* xp = a.res.x + int64_t(nt) * a.out + row;
              const float xn = *xp + __bfloat162float(__float2bfloat16(c[m][j][2 * hi + h]));
              *xp = xn;
              a.y[int64_t(nt) * a.out + row] =
                  __float2bfloat16(xn * __bfloat162float(a.res.w_norm[row]));
              sq += xn * xn;
            }
          }
        sq += __shfl_xor_sync(0xffffffffu, sq, 4);
        sq += __shfl_xor_sync(0xffffffffu, sq, 8);
        sq += __shfl_xor_sync(0xffffffffu, sq, 16);
        if (g == 0 && live) atomicAdd(a.res.ss + nt, sq);
        continue;
      }
      if (!live) continue;
#pragma unroll
      for (int m = 0; m < kWideMTiles; ++m) {
        if (a.mode == kSwiglu) {
          const int half = a.out / 2, i = (mt0 + m) * 8 + g;
          const float gate = c[m][j][h], up = c[m][j][2 + h];
          if (i < half)
            a.y[int64_t(nt) * half + i] = __float2bfloat16(gate / (1.0f + __expf(-gate)) * up);
          continue;
        }
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          const int row = (mt0 + m) * 16 + g + 8 * hi;
          if (row >= a.out) continue;
          float v = c[m][j][2 * hi + h];
          if (a.bias) v += __bfloat162float(a.bias[row]);
          if (a.mode == kOutF32)
            a.y_f32[int64_t(nt) * a.out + row] = v;
          else
            a.y[int64_t(nt) * a.out + row] = __float2bfloat16(v);
        }
      }
    }
}

// CTAs resident at once on the device.
int resident_ctas() {
  static const int n = [] {
    int dev = 0, sms = 0, per_sm = 0;
    HOGWILD_CUDA_CHECK(cudaGetDevice(&dev));
    HOGWILD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    HOGWILD_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, skinny_mma_kernel, kWarps * 32, 0));
    return sms * per_sm;
  }();
  return n;
}

// Split-K factor: a tile's CTA streams at a rate set by its loads in flight, so a grid that cannot
// fill the resident slots once runs below the roofline (QwQ-32B down_proj: 320 tiles on 528 slots,
// 2984 GB/s against cuBLAS's 3868; split 5 ways: 3837). For such grids (< 70% of the slots), picks
// the split (<= kMaxSplits, >= 2 steps per warp) whose CTA count wastes the least of the last
// wave. Larger grids stay unsplit (Qwen3-8B qkv, 384 tiles: 16.2 us unsplit, 17.9 split 4 ways).
int choose_splits(int64_t tiles, int64_t in) {
  const int64_t slots = resident_ctas(), steps = (in + kStepK - 1) / kStepK;
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

std::atomic<bool> g_wide{true};

// Split-K factor of the wide kernel: the fewest splits that give every SM two CTAs (a CTA keeps
// ~8 KB of W per warp in flight; the splits' sums cost the L2 32 KB per CTA at 64 rows), at most
// 8, at least 2 steps per split, at most kWideMaxSplitCtas CTAs.
int choose_wide_splits(int64_t tiles, int64_t in) {
  static const int sms = [] {
    int dev = 0, n = 0;
    HOGWILD_CUDA_CHECK(cudaGetDevice(&dev));
    HOGWILD_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  const int64_t steps = (in + kWideStepK - 1) / kWideStepK;
  int s = static_cast<int>(std::min<int64_t>(8, (2 * sms + tiles - 1) / tiles));
  while (s > 1 && (steps < 2 * int64_t(s) || tiles * s > kWideMaxSplitCtas)) --s;
  // every split gets >= 1 step: the kernel's split size is ceil(steps / s)
  const int64_t per = (steps + s - 1) / s;
  return static_cast<int>((steps + per - 1) / per);
}

template <int NT>
void launch_wide_nt(const SkinnyArgs& a, int64_t tiles, int splits, cudaStream_t stream) {
  launch_pdl(skinny_wide_kernel<NT>, dim3(static_cast<unsigned>(tiles), splits),
             dim3(kWideWarps * 32), 0, stream, a);
}

// m16: the 16-row M tiles of the matrix (kSwiglu: 8 gate + 8 up rows each).
void launch(SkinnyArgs a, int64_t m16, cudaStream_t stream) {
  if (a.n_rows > kSkinnyNarrowRows) {
    const int64_t tiles = (m16 + kWideWarps * kWideMTiles - 1) / (kWideWarps * kWideMTiles);
    const int splits = choose_wide_splits(tiles, a.in);
    HOGWILD_CUDA_REQUIRE(splits == 1 || tiles * splits <= kWideMaxSplitCtas);
    if (a.n_rows <= 16)
      launch_wide_nt<2>(a, tiles, splits, stream);
    else if (a.n_rows <= 32)
      launch_wide_nt<4>(a, tiles, splits, stream);
    else
      launch_wide_nt<8>(a, tiles, splits, stream);
    return;
  }
  const int64_t tiles = m16;
  const int splits = choose_splits(tiles, a.in);
  // the splits of a tile form a cluster (splits <= kMaxSplits = 8, the portable cluster size)
  a.cluster_split = splits > 1 && skinny_cluster_split();
  launch_pdl_clusters(skinny_mma_kernel, dim3(static_cast<unsigned>(tiles), splits),
                      dim3(kWarps * 32), dim3(1, a.cluster_split ? splits : 1, 1), 0, stream, a);
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

void set_skinny_wide(bool on) { g_wide.store(on); }
bool skinny_wide() { return g_wide.load(); }

bool skinny_supported(int64_t n_rows, int64_t in) {
  const int64_t max_rows = g_wide.load() ? kSkinnyMaxRows : kSkinnyNarrowRows;
  return n_rows >= 1 && n_rows <= max_rows && in % 8 == 0 && in > 0 && in < (int64_t(1) << 31);
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
