// Quantized linear kernels (quant_gemm.h). Kernels first, launchers second; the host-side repack
// is in quant_weights.cpp.
//
// Layout of one CTA: 16 W rows (one mma M tile) x NT n-tiles of 8 token rows, the K blocks (128 k)
// split over kWarps warps. In a block, lane (g = lane / 4, t = lane % 4) holds for u < 4 the eight
// values k = 32 u + 8 t + e of W rows g and g + 8 (one 16-byte load per row for int4, two for
// fp8) and of the token rows 8 j + g; the eight values feed two mma.sync m16n8k16 as physical
// elements 0-3 and 4-7, the same permutation of the 32-wide chunk u for W and x as in the skinny
// kernel (skinny_gemm.cu), so the dot products are unchanged. Chunk u of a block lies inside one
// group (groups are multiples of 32), so its fp32 product is multiplied by the group's scale of
// each row and added to the accumulator.
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/gemm.h"
#include "cuda/mma.cuh"
#include "cuda/pdl.cuh"
#include "cuda/quant_dequant.cuh"
#include "cuda/quant_gemm.h"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kWarps = 4;

struct QArgs {
  const bf16* x;  // (n_rows, in)
  const uint32_t* w;
  const uint32_t* sz;
  const bf16* bias;  // (out) or null
  bf16* y;           // (n_rows, out)
  int n_rows, in, out, group_size, n_groups, words_per_row, n_blocks;
};

using namespace qdev;

// grid ceil(out / 16), kWarps * 32 threads. NT n-tiles of 8 token rows (n_rows <= 8 NT), up to
// kQuantNarrowRows rows.
// PB: group_size is a multiple of 128, so one scale per row holds for a whole block.
template <int F, int NT, bool PB>
__global__ void __launch_bounds__(kWarps * 32) quant_mma_kernel(QArgs a) {
  constexpr int kStages = F == int(WeightFormat::int4) ? 4 : 2;
  __shared__ float red[kWarps][NT][32][4];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int r_lo = min(int(blockIdx.x) * 16 + g, a.out - 1);
  const int r_hi = min(int(blockIdx.x) * 16 + g + 8, a.out - 1);
  const uint32_t* w_lo = a.w + int64_t(r_lo) * a.words_per_row;
  const uint32_t* w_hi = a.w + int64_t(r_hi) * a.words_per_row;
  const uint32_t* sz_lo = a.sz + int64_t(r_lo) * a.n_groups;
  const uint32_t* sz_hi = a.sz + int64_t(r_hi) * a.n_groups;

  WBlock<F> buf[kStages];
#pragma unroll
  for (int i = 0; i < kStages; ++i)
    if (warp + i * kWarps < a.n_blocks) load_block<F>(w_lo, w_hi, warp + i * kWarps, t, buf[i]);

  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[j][i] = 0.0f;

  // x and the scales of a block are loaded one block ahead (an L2 round trip per block would
  // stall the warp): xn / sn hold block b + kWarps while block b is multiplied.
  auto load_x = [&](int b, uint4(&xv)[NT][4]) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int row = 8 * j + g;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int k = b * 128 + 32 * u + 8 * t;
        xv[j][u] = make_uint4(0, 0, 0, 0);
        if (b < a.n_blocks && row < a.n_rows && k < a.in)
          xv[j][u] = __ldg(reinterpret_cast<const uint4*>(a.x + int64_t(row) * a.in + k));
      }
    }
  };
  auto load_sz = [&](int b, uint32_t(&sv)[4][2]) {
#pragma unroll
    for (int u = 0; u < (PB ? 1 : 4); ++u) {
      const int grp = min((b * 128 + 32 * u) / a.group_size, a.n_groups - 1);
      sv[u][0] = b < a.n_blocks ? __ldg(sz_lo + grp) : 0u;
      sv[u][1] = b < a.n_blocks ? __ldg(sz_hi + grp) : 0u;
    }
  };
  uint4 xn[NT][4];
  uint32_t sn[4][2];
  load_x(warp, xn);
  load_sz(warp, sn);
  for (int base = warp; base < a.n_blocks; base += kStages * kWarps) {
#pragma unroll
    for (int i = 0; i < kStages; ++i) {
      const int b = base + i * kWarps;
      if (b >= a.n_blocks) break;
      // x of this block: token rows 8 j + g, k = 128 b + 32 u + 8 t .. + 7
      uint4 xv[NT][4];
      uint32_t sv[4][2];
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int u = 0; u < 4; ++u) xv[j][u] = xn[j][u];
#pragma unroll
      for (int u = 0; u < (PB ? 1 : 4); ++u) sv[u][0] = sn[u][0], sv[u][1] = sn[u][1];
      load_x(b + kWarps, xn);
      load_sz(b + kWarps, sn);
      // PB (groups of whole blocks): the block's four chunks go into one product, scaled once
      float cb[NT][4];
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) cb[j][q] = 0.0f;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const uint32_t s_lo = sv[PB ? 0 : u][0], s_hi = sv[PB ? 0 : u][1];
        const uint32_t zz_lo = zero_pair(s_lo), zz_hi = zero_pair(s_hi);
        uint32_t af[8];
        chunk_fragments<F>(buf[i], u, zz_lo, zz_hi, af);
        const float f_lo = scale_of(s_lo, F), f_hi = scale_of(s_hi, F);
#pragma unroll
        for (int j = 0; j < NT; ++j) chunk_product<PB>(acc[j], cb[j], af, xv[j][u], f_lo, f_hi);
      }
      if constexpr (PB) block_scaled(acc, cb, scale_of(sv[0][0], F), scale_of(sv[0][1], F));
      if (b + kStages * kWarps < a.n_blocks)
        load_block<F>(w_lo, w_hi, b + kStages * kWarps, t, buf[i]);
    }
  }
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) red[warp][j][lane][i] = acc[j][i];
  __syncthreads();
  if (warp != 0) return;
  // c0, c1: W row g, token rows 8 j + 2 t, + 1; c2, c3: W row g + 8.
  const int o_lo = int(blockIdx.x) * 16 + g, o_hi = o_lo + 8;
  const float b_lo = a.bias && o_lo < a.out ? __bfloat162float(a.bias[o_lo]) : 0.0f;
  const float b_hi = a.bias && o_hi < a.out ? __bfloat162float(a.bias[o_hi]) : 0.0f;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    float c[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      c[i] = red[0][j][lane][i];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) c[i] += red[w][j][lane][i];
    }
    const int t0 = 8 * j + 2 * t;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int tok = t0 + (i & 1), o = i < 2 ? o_lo : o_hi;
      if (tok < a.n_rows && o < a.out)
        a.y[int64_t(tok) * a.out + o] = __float2bfloat16(c[i] + (i < 2 ? b_lo : b_hi));
    }
  }
}

// The wide kernel, for kQuantNarrowRows + 1 .. kQuantMaxRows token rows: a CTA is kWideWarps warps
// of 16 W rows each (kWideRows W rows) x all the token rows (NT n-tiles of 8), over the K blocks
// [b_begin, b_end) of its split. Every warp multiplies the same x, so x is copied once per CTA into
// shared memory (cp.async, kXStages blocks in flight), while each warp streams its own W rows into
// registers (kWStages blocks ahead). Per CTA, x costs (token rows x 2) / (kWideRows x bytes per
// weight) of the W bytes it reads from L2 — the 16-row CTA above read x once per 16 W rows, more
// than the weights at 32 token rows. Token row r of a block is 16 chunks of 8 k (16 bytes); chunk c
// sits at c ^ (4 (r & 1)) so that the 8 lanes of a 16-byte shared load phase (rows g, g + 1, chunks
// 4 u + t) hit 32 different banks.
constexpr int kWideWarps = 8;
constexpr int kWideRows = 16 * kWideWarps;
constexpr int kXStages = 4;
constexpr int kMaxWideSplits = 8;  // the portable cluster size

struct WideArgs {
  QArgs q;
  bool cluster_split;  // split-K CTAs of a tile form a cluster (grid.y = splits)
};

template <int NT>
constexpr int wide_smem_bytes() {
  constexpr int stages = kXStages * NT * 8 * 256;
  constexpr int red = kWideWarps * 32 * NT * 4 * 4;
  return stages > red ? stages : red;
}

// Copies x rows [0, 8 NT) x k [128 b, 128 b + 128) into stage (swizzled as above); rows past
// n_rows and k past in are zero-filled.
template <int NT>
__device__ __forceinline__ void copy_x_block(const QArgs& a, int b, unsigned char* stage) {
  constexpr int kChunks = NT * 8 * 16;
  for (int q = threadIdx.x; q < kChunks; q += kWideWarps * 32) {
    const int r = q >> 4, c = q & 15, k = b * 128 + c * 8;
    const bool valid = r < a.n_rows && k < a.in;
    const bf16* src = valid ? a.x + int64_t(r) * a.in + k : a.x;
    cp_async16(stage + r * 256 + ((c ^ ((r & 1) << 2)) << 4), src, valid);
  }
}

// grid (ceil(out / kWideRows), splits), kWideWarps * 32 threads, wide_smem_bytes<NT>() of dynamic
// shared memory. PB as in quant_mma_kernel.
template <int F, int NT, bool PB>
__global__ void __launch_bounds__(kWideWarps * 32) quant_wide_kernel(WideArgs wa) {
  constexpr int kWStages = F == int(WeightFormat::int4) ? 8 : 4;
  extern __shared__ __align__(16) unsigned char wsmem[];
  const QArgs& a = wa.q;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = int(blockIdx.x) * kWideRows + warp * 16;
  const int r_lo = min(row0 + g, a.out - 1), r_hi = min(row0 + g + 8, a.out - 1);
  const uint32_t* w_lo = a.w + int64_t(r_lo) * a.words_per_row;
  const uint32_t* w_hi = a.w + int64_t(r_hi) * a.words_per_row;
  const uint32_t* sz_lo = a.sz + int64_t(r_lo) * a.n_groups;
  const uint32_t* sz_hi = a.sz + int64_t(r_hi) * a.n_groups;
  const int per_split = (a.n_blocks + int(gridDim.y) - 1) / int(gridDim.y);
  const int b_begin = int(blockIdx.y) * per_split;
  const int nb = max(0, min(a.n_blocks, b_begin + per_split) - b_begin);

  // The weights are constants: their first blocks stream in before the wait for the kernel that
  // wrote x (pdl.cuh).
  WBlock<F> buf[kWStages];
#pragma unroll
  for (int i = 0; i < kWStages; ++i)
    if (i < nb) load_block<F>(w_lo, w_hi, b_begin + i, t, buf[i]);
  auto load_sz = [&](int n, uint32_t(&sv)[4][2]) {
#pragma unroll
    for (int u = 0; u < (PB ? 1 : 4); ++u) {
      const int grp = min(((b_begin + n) * 128 + 32 * u) / a.group_size, a.n_groups - 1);
      sv[u][0] = n < nb ? __ldg(sz_lo + grp) : 0u;
      sv[u][1] = n < nb ? __ldg(sz_hi + grp) : 0u;
    }
  };
  uint32_t sn[4][2];
  load_sz(0, sn);
  pdl_wait();
#pragma unroll
  for (int s = 0; s < kXStages - 1; ++s) {
    if (s < nb) copy_x_block<NT>(a, b_begin + s, wsmem + s * NT * 8 * 256);
    cp_async_commit();
  }

  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[j][i] = 0.0f;

  for (int base = 0; base < nb; base += kWStages) {
#pragma unroll
    for (int i = 0; i < kWStages; ++i) {
      const int n = base + i;
      if (n >= nb) break;
      // stage n has landed for every thread; stage n - 1 is free for block n + kXStages - 1
      cp_async_wait<kXStages - 2>();
      __syncthreads();
      if (n + kXStages - 1 < nb)
        copy_x_block<NT>(a, b_begin + n + kXStages - 1,
                         wsmem + ((n + kXStages - 1) % kXStages) * NT * 8 * 256);
      cp_async_commit();
      const unsigned char* xs = wsmem + (n % kXStages) * NT * 8 * 256;
      uint32_t sv[4][2];
#pragma unroll
      for (int u = 0; u < (PB ? 1 : 4); ++u) sv[u][0] = sn[u][0], sv[u][1] = sn[u][1];
      load_sz(n + 1, sn);
      float cb[NT][4];
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) cb[j][q] = 0.0f;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const uint32_t s_lo = sv[PB ? 0 : u][0], s_hi = sv[PB ? 0 : u][1];
        uint32_t af[8];
        chunk_fragments<F>(buf[i], u, zero_pair(s_lo), zero_pair(s_hi), af);
        const float f_lo = scale_of(s_lo, F), f_hi = scale_of(s_hi, F);
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          // x row 8 j + g (parity of g), chunk 4 u + t
          const uint4 xv = *reinterpret_cast<const uint4*>(xs + (8 * j + g) * 256 +
                                                           (((4 * u + t) ^ ((g & 1) << 2)) << 4));
          chunk_product<PB>(acc[j], cb[j], af, xv, f_lo, f_hi);
        }
      }
      if constexpr (PB) block_scaled(acc, cb, scale_of(sv[0][0], F), scale_of(sv[0][1], F));
      if (n + kWStages < nb) load_block<F>(w_lo, w_hi, b_begin + n + kWStages, t, buf[i]);
    }
  }
  cp_async_wait<0>();

  // The splits of a tile: each CTA leaves its sums in its own shared memory; after the cluster
  // barrier, split s adds up (in split order, so the bits do not depend on timing) the warps
  // w with w % splits == s, reading the others' sums through distributed shared memory; a second
  // barrier keeps every CTA's shared memory alive until the reads are done.
  int splits = 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (wa.cluster_split) {
    splits = int(gridDim.y);
    __syncthreads();  // every warp is done with the x stages
    float4* red = reinterpret_cast<float4*>(wsmem);
#pragma unroll
    for (int j = 0; j < NT; ++j)
      red[(warp * NT + j) * 32 + lane] = make_float4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    const bool mine = warp % splits == int(blockIdx.y);
    if (mine) {
#pragma unroll
      for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
      for (int sp = 0; sp < splits; ++sp)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const unsigned local =
              unsigned(__cvta_generic_to_shared(&red[(warp * NT + j) * 32 + lane]));
          unsigned remote;
          asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(sp));
          float4 v;
          asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                       : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                       : "r"(remote)
                       : "memory");
          acc[j][0] += v.x, acc[j][1] += v.y, acc[j][2] += v.z, acc[j][3] += v.w;
        }
    }
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (!mine) return;
  }
#endif
  if (splits == 1 && gridDim.y != 1) __trap();  // the launcher splits only as clusters
  // c0, c1: W row g, token rows 8 j + 2 t, + 1; c2, c3: W row g + 8.
  const int o_lo = row0 + g, o_hi = o_lo + 8;
  const float b_lo = a.bias && o_lo < a.out ? __bfloat162float(a.bias[o_lo]) : 0.0f;
  const float b_hi = a.bias && o_hi < a.out ? __bfloat162float(a.bias[o_hi]) : 0.0f;
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int tok = 8 * j + 2 * t + (i & 1), o = i < 2 ? o_lo : o_hi;
      if (tok < a.n_rows && o < a.out)
        a.y[int64_t(tok) * a.out + o] = __float2bfloat16(acc[j][i] + (i < 2 ? b_lo : b_hi));
    }
}

// x_perm[r][j] = x[r][perm[j]]
__global__ void gather_cols_kernel(const bf16* x, const int32_t* perm, bf16* out, int n_rows,
                                   int in) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= int64_t(n_rows) * in) return;
  const int64_t r = i / in, j = i % in;
  out[i] = x[r * in + perm[j]];
}

// dst (out, in) bf16 in the packed column order. A thread writes 8 consecutive values (16 bytes,
// so neighbouring threads write neighbouring bytes): k = 8 i .. 8 i + 7 of row o, which one packed
// word (int4: block b, slot 4 t + u) or two (fp8: bytes 32 t + 8 u .. + 7 of block b) hold.
__global__ void dequant_kernel(QuantWeight W, bf16* dst) {
  const int64_t per_row = W.in / 8;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= W.out * per_row) return;
  const int64_t o = i / per_row, k = (i % per_row) * 8;
  const int64_t b = k / 128, u = (k % 128) / 32, t = (k % 32) / 8;
  const uint32_t sz = W.sz[o * W.n_groups + min(k / W.group_size, W.n_groups - 1)];
  __align__(16) bf16 v[8];
  if (W.format == WeightFormat::int4) {
    const int64_t words = (W.in + 127) / 128 * 16;
    const uint32_t q = W.w[o * words + b * 16 + 4 * t + u];
    constexpr int kPos[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // nibble position of k offset e
    const float z = __bfloat162float(__ushort_as_bfloat16(uint16_t(sz >> 16))) - 128.0f;
    const float s = __half2float(__ushort_as_half(uint16_t(sz & 0xffffu)));
#pragma unroll
    for (int e = 0; e < 8; ++e)
      v[e] = __float2bfloat16((float((q >> (4 * kPos[e])) & 0xf) - z) * s);
  } else {
    const int64_t words = (W.in + 127) / 128 * 32;
    const uint2 pair = *reinterpret_cast<const uint2*>(W.w + o * words + b * 32 + 8 * t + 2 * u);
    const float s = __uint_as_float(sz);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const uint32_t byte = ((e < 4 ? pair.x : pair.y) >> (8 * (e & 3))) & 0xffu;
      const uint32_t bits = ((byte & 0x80u) << 24) | ((byte & 0x7fu) << 20);
      v[e] = __float2bfloat16(__uint_as_float(bits) * 0x1p120f * s);
    }
  }
  *reinterpret_cast<uint4*>(dst + o * W.in + k) = *reinterpret_cast<const uint4*>(v);
}

template <int F>
void launch_rows(const QArgs& a, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((a.out + 15) / 16)), block(kWarps * 32);
  const bool pb = a.group_size % 128 == 0;
  if (a.n_rows <= 8)
    (pb ? quant_mma_kernel<F, 1, true>
        : quant_mma_kernel<F, 1, false>)<<<grid, block, 0, stream>>>(a);
  else if (a.n_rows <= 16)
    (pb ? quant_mma_kernel<F, 2, true>
        : quant_mma_kernel<F, 2, false>)<<<grid, block, 0, stream>>>(a);
  else
    (pb ? quant_mma_kernel<F, 4, true>
        : quant_mma_kernel<F, 4, false>)<<<grid, block, 0, stream>>>(a);
  HOGWILD_CUDA_CHECK(cudaGetLastError());
}

// Split-K for the wide kernel: the splits (<= kMaxWideSplits, >= 2 blocks each) whose CTA count
// wastes the least of the last wave of `slots` resident CTAs; 1 when the code has no cluster path.
int wide_splits(int64_t tiles, int n_blocks, int64_t slots, bool clusters) {
  if (!clusters) return 1;
  int best = 1;
  double best_eff = 0.0;
  for (int s = 1; s <= kMaxWideSplits && (s == 1 || n_blocks / s >= 2); ++s) {
    const int64_t ctas = tiles * s, waves = (ctas + slots - 1) / slots;
    const double eff = double(ctas) / double(waves * slots);
    if (eff > best_eff + 0.02) best = s, best_eff = eff;
  }
  const int per = (n_blocks + best - 1) / best;
  return (n_blocks + per - 1) / per;  // every split has blocks
}

template <int F, int NT, bool PB>
void launch_wide_as(const QArgs& q, cudaStream_t stream) {
  constexpr auto kernel = quant_wide_kernel<F, NT, PB>;
  constexpr int smem = wide_smem_bytes<NT>();
  struct Setup {
    int slots = 0;
    bool clusters = false;
  };
  static const Setup setup = [&] {
    HOGWILD_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int dev = 0, sms = 0, per_sm = 0;
    HOGWILD_CUDA_CHECK(cudaGetDevice(&dev));
    HOGWILD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    HOGWILD_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWideWarps * 32, smem));
    cudaFuncAttributes at{};
    HOGWILD_CUDA_CHECK(cudaFuncGetAttributes(&at, kernel));
    // the cluster merge exists in the sm_90a code only (not in the compute_80 PTX)
    return Setup{std::max(1, sms * per_sm), at.binaryVersion >= 90 && hopper_or_later()};
  }();
  const int64_t tiles = (q.out + kWideRows - 1) / kWideRows;
  const int splits = wide_splits(tiles, q.n_blocks, setup.slots, setup.clusters);
  const WideArgs wa{q, splits > 1};
  launch_pdl_clusters(kernel, dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(splits)),
                      dim3(kWideWarps * 32), dim3(1, static_cast<unsigned>(splits), 1), smem,
                      stream, wa);
}

template <int F>
void launch_wide(const QArgs& a, cudaStream_t stream) {
  (a.group_size % 128 == 0 ? launch_wide_as<F, 8, true> : launch_wide_as<F, 8, false>)(a, stream);
}

}  // namespace

int64_t QuantWeight::bytes() const {
  const int64_t kb = (in + 127) / 128;
  const int64_t words = format == WeightFormat::int4 ? kb * 16 : kb * 32;
  return out * words * 4 + out * n_groups * 4 + (perm ? in * 4 : 0);
}

int64_t quant_scratch_bytes(const QuantWeight& W, int64_t n_rows) {
  int64_t b = W.perm ? n_rows * W.in * 2 : 0;
  if (n_rows > kQuantChunkedRows) b += W.out * W.in * 2;
  return (b + 255) / 256 * 256;
}

void dequantize_to_bf16(const QuantWeight& W, bf16* dst, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(W.in % 8 == 0 && reinterpret_cast<uintptr_t>(dst) % 16 == 0);
  const int64_t n = W.out * (W.in / 8);
  dequant_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(W, dst);
  HOGWILD_CUDA_CHECK(cudaGetLastError());
}

const bf16* gather_act_order(const bf16* x, const QuantWeight& W, int64_t n_rows, void* scratch,
                             cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(W.perm != nullptr);
  const int64_t n = n_rows * W.in;
  auto* xp = static_cast<bf16*>(scratch);
  gather_cols_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
      x, W.perm, xp, static_cast<int>(n_rows), static_cast<int>(W.in));
  HOGWILD_CUDA_CHECK(cudaGetLastError());
  return xp;
}

void quant_linear(Gemm& gemm, const bf16* x, const QuantWeight& W, const bf16* bias, bf16* y,
                  int64_t n_rows, void* scratch, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(W.format == WeightFormat::int4 || W.format == WeightFormat::fp8);
  HOGWILD_CUDA_REQUIRE(W.in % 8 == 0 && n_rows >= 1);
  auto* s = static_cast<uint8_t*>(scratch);
  if (W.perm) {
    x = gather_act_order(x, W, n_rows, scratch, stream);
    s += (n_rows * W.in * 2 + 255) / 256 * 256;
  }
  if (n_rows > kQuantChunkedRows) {
    auto* wb = reinterpret_cast<bf16*>(s);
    dequantize_to_bf16(W, wb, stream);
    gemm.linear(x, wb, y, n_rows, W.in, W.out, bias);
    return;
  }
  QArgs a{};
  a.w = W.w;
  a.sz = W.sz;
  a.bias = bias;
  a.in = static_cast<int>(W.in);
  a.out = static_cast<int>(W.out);
  a.group_size = static_cast<int>(W.group_size);
  a.n_groups = static_cast<int>(W.n_groups);
  a.n_blocks = static_cast<int>((W.in + 127) / 128);
  a.words_per_row = a.n_blocks * (W.format == WeightFormat::int4 ? 16 : 32);
  for (int64_t r0 = 0; r0 < n_rows; r0 += kQuantMaxRows) {
    a.x = x + r0 * W.in;
    a.y = y + r0 * W.out;
    a.n_rows = static_cast<int>(std::min<int64_t>(kQuantMaxRows, n_rows - r0));
    const bool wide = a.n_rows > kQuantNarrowRows;
    if (W.format == WeightFormat::int4)
      (wide ? launch_wide<int(WeightFormat::int4)> : launch_rows<int(WeightFormat::int4)>)(a,
                                                                                           stream);
    else
      (wide ? launch_wide<int(WeightFormat::fp8)> : launch_rows<int(WeightFormat::fp8)>)(a, stream);
  }
}

}  // namespace hogwild::cuda
