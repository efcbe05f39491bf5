// The wide quantized kernel (quant_gemm.h quant_wide_linear; docs/CUDA.md "Quantized weights"):
// 17 to 64 token rows times a packed int4 or fp8 weight, with the weights, their scale words and x
// streamed through shared memory by cp.async in a ring of 128-k blocks, so that no register waits
// on global memory.
//
// A CTA is kRows = 128 W rows x TOK (64 or 32) token rows, 8 warps. Warp w takes W rows
// 64 (w & 1) + [0, 64) (four mma M tiles) and four n-tiles of 8 token rows; of each 128-k block
// (the lane layout of quant_dequant.cuh: chunks u = 0..3 of 32 k) it takes, at TOK = 64, token
// rows 32 ((w >> 1) & 1) + [0, 32) and the chunks 2 (w >> 2), + 1; at TOK = 32 every token row and
// the chunk w >> 1. The warps of one output tile that took other chunks are added in shared
// memory at the end, in a fixed order. A warp's tile of 64 x 32 reads 96 bytes of shared memory
// per mma, a third of a 16 x 64 tile's (docs/PERFLOG.md).
//
// The group scales: instead of a second accumulator per group, the accumulator is kept in units
// of the current group's scale (Horner's rule): when the group changes from scale s to s', acc *=
// s / s' and the group's exact products go straight into acc; at the end acc *= s_last. A group
// whose scale is 0 contributes nothing: its weight fragments are zeroed and s is kept. Every
// rounding is an fp32 one (the weights enter the tensor cores as exact bf16 numbers).
//
// Shared memory of a stage: x (TOK token rows x 256 bytes, chunk c of row r at c ^ 4 (r & 1), so
// that a 16-byte load phase hits 32 banks), W (128 rows x 64 (int4) or 128 (fp8) bytes, the
// 8-byte unit p of row r at p ^ unit_swizzle(r)), and the rows' scale words of the four chunks.
#include <cuda_bf16.h>

#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/mma.cuh"
#include "cuda/pdl.cuh"
#include "cuda/pdl.h"
#include "cuda/quant_dequant.cuh"
#include "cuda/quant_gemm.h"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;
using namespace qdev;

constexpr int kInt4 = int(WeightFormat::int4);
constexpr int kWarps = 8;
constexpr int kRows = 128;  // W rows per CTA
constexpr int kSzBytes = kRows * 4 * 4;
constexpr int kMaxSplits = 8;         // the portable cluster size
constexpr int kTileFloats = 64 * 32;  // one warp's sums (4 x 4 x 4 per lane)

// The shape of the kernel for format F and TOK token rows: a W row of a block is 64 (int4) or 128
// (fp8) bytes; kSplitK warps share an output tile (taking different chunks); two CTAs of kStages
// stages fit one SM's shared memory.
template <int F, int TOK>
struct Ring {
  static constexpr int kRowBytes = F == kInt4 ? 64 : 128;
  static constexpr int kStages = TOK == 64 ? (F == kInt4 ? 4 : 3) : (F == kInt4 ? 6 : 4);
  static constexpr int kSplitK = TOK == 64 ? 2 : 4;
  static constexpr int kOwners = kWarps / kSplitK;  // output tiles of a CTA
  static constexpr int kXBytes = TOK * 256;
  static constexpr int kWBytes = kRows * kRowBytes;
  static constexpr int kStageBytes = kXBytes + kWBytes + kSzBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes;
  // the warps' sums: (kSplitK - 1) x kOwners tiles, then the cluster's kOwners
  static constexpr int kClusterOffset = (kSplitK - 1) * kOwners * kTileFloats * 4;
  static_assert(kSmemBytes >= kWarps * kTileFloats * 4, "the reductions reuse the stages");
};

struct Args {
  const bf16* x;  // (n_rows, in)
  const uint32_t* w;
  const uint32_t* sz;
  const bf16* bias;  // (out) or null
  bf16* y;           // (n_rows, out)
  int n_rows, in, out, group_size, n_groups, words_per_row, n_blocks;
  bool cluster_split;  // the split-K CTAs of a tile form a cluster (grid.y = splits)
};

__device__ __forceinline__ void cp_async8(void* dst, const void* src) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(src));
}

__device__ __forceinline__ int group_of(const Args& a, int b, int u) {
  return min((b * 128 + 32 * u) / a.group_size, a.n_groups - 1);
}

// Where a W row r keeps its 8-byte unit p: at p ^ unit_swizzle(r), so that the lanes of an 8-byte
// load phase (rows g = 0..3 of an M tile, t = 0..3) hit 32 banks. int4 (8 units a row): a lane
// reads unit 2 t + u / 2 for chunk u; fp8 (16): unit 4 t + u.
template <int F>
__device__ __forceinline__ int unit_swizzle(int r) {
  return F == kInt4 ? (r >> 1) & 1 : ((r & 1) << 1) | ((r >> 1) & 1);
}

// W rows row0 + [0, kRows) of block b and their scale words into the stage (all threads).
template <int F, int TOK>
__device__ __forceinline__ void copy_weights(const Args& a, int row0, int b, unsigned char* st) {
  using R = Ring<F, TOK>;
  unsigned char* ws = st + R::kXBytes;
  auto* szs = reinterpret_cast<uint32_t*>(st + R::kXBytes + R::kWBytes);
  constexpr int kUnits = R::kRowBytes / 8;  // 8-byte units of a row
  for (int q = threadIdx.x; q < kRows * kUnits; q += kWarps * 32) {
    const int r = q / kUnits, p = q % kUnits;
    const int row = min(row0 + r, a.out - 1);
    cp_async8(ws + r * R::kRowBytes + ((p ^ unit_swizzle<F>(r)) << 3),
              a.w + int64_t(row) * a.words_per_row + b * (2 * kUnits) + 2 * p);
  }
  for (int q = threadIdx.x; q < kRows * 4; q += kWarps * 32) {
    const int r = q >> 2, u = q & 3;
    const int row = min(row0 + r, a.out - 1);
    cp_async4(szs + q, a.sz + int64_t(row) * a.n_groups + group_of(a, b, u));
  }
}

// x rows [0, TOK) x k [128 b, 128 b + 128) into the stage; rows past n_rows and k past in are 0.
template <int TOK>
__device__ __forceinline__ void copy_x(const Args& a, int b, unsigned char* st) {
  for (int q = threadIdx.x; q < TOK * 16; q += kWarps * 32) {
    const int r = q >> 4, c = q & 15, k = b * 128 + c * 8;
    const bool valid = r < a.n_rows && k < a.in;
    const bf16* src = valid ? a.x + int64_t(r) * a.in + k : a.x;
    cp_async16(st + r * 256 + ((c ^ ((r & 1) << 2)) << 4), src, valid);
  }
}

// The products of block b's chunks u0 .. u0 + TOK / 32 - 1 (one stage) into acc (see the file
// comment). th: the warp's half of 64 token rows (0 at TOK = 32); f: the scale acc is in, per M
// tile m and row (g, g + 8); grp: the group of the previous chunk (-1 at first).
template <int F, int TOK>
__device__ __forceinline__ void block(const Args& a, const unsigned char* st, int b, int u0, int fh,
                                      int th, int n_tiles, float (&acc)[4][4][4], float (&f)[4][2],
                                      int& grp) {
  using R = Ring<F, TOK>;
  constexpr int kChunks = TOK / 32;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const unsigned char* ws = st + R::kXBytes;
  const auto* szs = reinterpret_cast<const uint32_t*>(st + R::kXBytes + R::kWBytes);
  // word 4 t + u of rows g, g + 8 of each M tile: int4, unit 2 t + u / 2 (words of u, u ^ 1; one
  // load for both chunks at TOK = 64); fp8: words 8 t + 2 u, + 1, unit 4 t + u
  auto load = [&](int m, int h, int u) {
    const int r = fh * 64 + 16 * m + g + 8 * h;
    const int unit = F == kInt4 ? 2 * t + (u >> 1) : 4 * t + u;
    return *reinterpret_cast<const uint2*>(ws + r * R::kRowBytes +
                                           ((unit ^ unit_swizzle<F>(r)) << 3));
  };
  uint2 q[4][2];
  if constexpr (F == kInt4)
#pragma unroll
    for (int m = 0; m < 4; ++m) q[m][0] = load(m, 0, u0), q[m][1] = load(m, 1, u0);
#pragma unroll
  for (int uu = 0; uu < kChunks; ++uu) {
    const int u = u0 + uu;
    const int gr = group_of(a, b, u);
    if (gr != grp) {  // warp-uniform: rescale acc into the new group's scales
      grp = gr;
#pragma unroll
      for (int m = 0; m < 4; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float s = scale_of(szs[(fh * 64 + 16 * m + g + 8 * h) * 4 + u], F);
          if (s == 0.0f) continue;  // a zero group: its fragments are zeroed below, f kept
          const float r = f[m][h] / s;
          f[m][h] = s;
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[m][j][2 * h] *= r, acc[m][j][2 * h + 1] *= r;
        }
    }
    uint4 xv[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      xv[j] = j < n_tiles ? *reinterpret_cast<const uint4*>(st + (32 * th + 8 * j + g) * 256 +
                                                            (((4 * u + t) ^ ((g & 1) << 2)) << 4))
                          : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const uint32_t s_lo = szs[(fh * 64 + 16 * m + g) * 4 + u];
      const uint32_t s_hi = szs[(fh * 64 + 16 * m + g + 8) * 4 + u];
      uint32_t af[8];
      if constexpr (F == kInt4) {
        int4_word_fragments(u & 1 ? q[m][0].y : q[m][0].x, u & 1 ? q[m][1].y : q[m][1].x,
                            zero_pair(s_lo), zero_pair(s_hi), af);
      } else {
        const uint2 l = load(m, 0, u), h = load(m, 1, u);
        fp8_word_fragments(l.x, l.y, h.x, h.y, af);
      }
      const uint32_t keep_lo = scale_of(s_lo, F) == 0.0f ? 0u : ~0u;
      const uint32_t keep_hi = scale_of(s_hi, F) == 0.0f ? 0u : ~0u;
#pragma unroll
      for (int i = 0; i < 8; i += 2) af[i] &= keep_lo, af[i + 1] &= keep_hi;
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (j < n_tiles) {
          mma_bf16(acc[m][j], af[0], af[1], af[2], af[3], xv[j].x, xv[j].y);
          mma_bf16(acc[m][j], af[4], af[5], af[6], af[7], xv[j].z, xv[j].w);
        }
    }
  }
}

// Split-K over a cluster (sm_90): each CTA leaves its sums in its shared memory; piece p = (owner
// warp o, M tile m) of the tile is added up by split p % splits, in split order (the bits do not
// depend on timing). o: the output tile this warp owns, -1 for none. Returns the mask of the M
// tiles this warp writes (all four without splits).
__device__ __forceinline__ unsigned cluster_sum(const Args& a, int o, float (&acc)[4][4][4],
                                                unsigned char* smem) {
  unsigned mine = 0xfu;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (!a.cluster_split) return mine;
  const int lane = threadIdx.x & 31, splits = int(gridDim.y);
  float* red = reinterpret_cast<float*>(smem);
  __syncthreads();  // every warp is done with the stages
  if (o >= 0)
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          red[((o * 64) + (m * 16 + j * 4 + i)) * 32 + lane] = acc[m][j][i];
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  mine = 0;
  if (o >= 0)
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      if ((o * 4 + m) % splits != int(blockIdx.y)) continue;
      mine |= 1u << m;
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;
      for (int sp = 0; sp < splits; ++sp)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const unsigned local = unsigned(
                __cvta_generic_to_shared(&red[((o * 64) + (m * 16 + j * 4 + i)) * 32 + lane]));
            unsigned remote;
            float v;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                         : "=r"(remote)
                         : "r"(local), "r"(sp));
            asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
            acc[m][j][i] += v;
          }
    }
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
  if (gridDim.y != 1) __trap();  // the launcher splits only as clusters
#endif
  return mine;
}

// The kSplitK warps of output tile o (after a barrier that frees the stages): warps kk >= 1 leave
// their sums in shared memory, warp kk = 0 adds them to its own in the order of kk.
template <int TOK>
__device__ __forceinline__ void combine_k(int o, int kk, float (&acc)[4][4][4],
                                          unsigned char* smem) {
  constexpr int kOwners = kWarps / (TOK == 64 ? 2 : 4), kSplitK = kWarps / kOwners;
  const int lane = threadIdx.x & 31;
  float* red = reinterpret_cast<float*>(smem);
  auto at = [&](int slot, int m, int j, int i) -> float& {
    return red[(slot * kTileFloats) + (m * 16 + j * 4 + i) * 32 + lane];
  };
  if (kk > 0)
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) at((kk - 1) * kOwners + o, m, j, i) = acc[m][j][i];
  __syncthreads();
  if (kk == 0)
    for (int k = 1; k < kSplitK; ++k)
#pragma unroll
      for (int m = 0; m < 4; ++m)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[m][j][i] += at((k - 1) * kOwners + o, m, j, i);
}

// y rows tok0 + [0, 32) x W rows w0 + [0, 64) (+ bias) from a warp's sums, the M tiles in mask
// `mine`. c0, c1: W row g of the M tile, token rows 8 j + 2 t, + 1; c2, c3: W row g + 8.
__device__ __forceinline__ void write_tile(const Args& a, int w0, int tok0, unsigned mine,
                                           const float (&acc)[4][4][4]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    if (!(mine >> m & 1u)) continue;
    const int o_lo = w0 + 16 * m + g, o_hi = o_lo + 8;
    const float b_lo = a.bias && o_lo < a.out ? __bfloat162float(a.bias[o_lo]) : 0.0f;
    const float b_hi = a.bias && o_hi < a.out ? __bfloat162float(a.bias[o_hi]) : 0.0f;
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int tok = tok0 + 8 * j + 2 * t + (i & 1), oo = i < 2 ? o_lo : o_hi;
        if (tok < a.n_rows && oo < a.out)
          a.y[int64_t(tok) * a.out + oo] = __float2bfloat16(acc[m][j][i] + (i < 2 ? b_lo : b_hi));
      }
  }
}

// grid (ceil(out / kRows), splits), kWarps * 32 threads, Ring<F, TOK>::kSmemBytes of dynamic
// shared memory.
template <int F, int TOK>
__global__ void __launch_bounds__(kWarps * 32, 2) quant_wide_kernel(Args a) {
  using R = Ring<F, TOK>;
  constexpr int kStages = R::kStages, kStageBytes = R::kStageBytes;
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x / 32;
  // o: the output tile (W half fh, token half th); kk: which of its kSplitK warps
  const int o = warp % R::kOwners, kk = warp / R::kOwners;
  const int fh = o & 1, th = o >> 1;
  const int u0 = TOK == 64 ? 2 * kk : kk;
  const int row0 = int(blockIdx.x) * kRows;
  const int per_split = (a.n_blocks + int(gridDim.y) - 1) / int(gridDim.y);
  const int b_begin = int(blockIdx.y) * per_split;
  const int nb = max(0, min(a.n_blocks, b_begin + per_split) - b_begin);
  const int n_tiles = min(4, max(0, (a.n_rows - 32 * th + 7) / 8));

  // The weights are constants: the first stages' weights stream in before the wait for the
  // kernel that wrote x (pdl.cuh); commit group s holds x of stage s (and group 0 those weights).
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s)
    if (s < nb) copy_weights<F, TOK>(a, row0, b_begin + s, smem + s * kStageBytes);
  pdl_wait();
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < nb) copy_x<TOK>(a, b_begin + s, smem + s * kStageBytes);
    cp_async_commit();
  }

  float acc[4][4][4];
  float f[4][2];
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    f[m][0] = f[m][1] = 1.0f;
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;
  }
  int grp = -1;
  for (int n = 0; n < nb; ++n) {
    cp_async_wait<kStages - 2>();  // stage n has landed (this thread's copies) ...
    __syncthreads();               // ... everyone's; and stage n - 1 is free
    if (n + kStages - 1 < nb) {
      unsigned char* st = smem + ((n + kStages - 1) % kStages) * kStageBytes;
      copy_weights<F, TOK>(a, row0, b_begin + n + kStages - 1, st);
      copy_x<TOK>(a, b_begin + n + kStages - 1, st);
    }
    cp_async_commit();
    const unsigned char* st = smem + (n % kStages) * kStageBytes;
    block<F, TOK>(a, st, b_begin + n, u0, fh, th, n_tiles, acc, f, grp);
  }
  cp_async_wait<0>();
#pragma unroll
  for (int m = 0; m < 4; ++m)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][j][i] *= f[m][i >> 1];

  __syncthreads();  // every warp is done with the stages
  combine_k<TOK>(o, kk, acc, smem);
  const unsigned mine = cluster_sum(a, kk == 0 ? o : -1, acc, smem + R::kClusterOffset);
  if (kk == 0) write_tile(a, row0 + fh * 64, 32 * th, mine, acc);
}

// The split count (<= kMaxSplits, >= 2 blocks each) whose CTA count wastes the least of the last
// wave of `slots` resident CTAs; 1 without the cluster path.
int splits_for(int64_t tiles, int n_blocks, int64_t slots, bool clusters) {
  if (!clusters) return 1;
  int best = 1;
  double best_eff = 0.0;
  for (int s = 1; s <= kMaxSplits && (s == 1 || n_blocks / s >= 2); ++s) {
    const int64_t ctas = tiles * s, waves = (ctas + slots - 1) / slots;
    const double eff = double(ctas) / double(waves * slots);
    if (eff > best_eff + 0.02) best = s, best_eff = eff;
  }
  const int per = (n_blocks + best - 1) / best;
  return (n_blocks + per - 1) / per;  // every split has blocks
}

template <int F, int TOK>
void launch(const bf16* x, const QuantWeight& W, const bf16* bias, bf16* y, int n_rows,
            cudaStream_t stream) {
  constexpr auto kernel = quant_wide_kernel<F, TOK>;
  constexpr int smem = Ring<F, TOK>::kSmemBytes;
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
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWarps * 32, smem));
    cudaFuncAttributes at{};
    HOGWILD_CUDA_CHECK(cudaFuncGetAttributes(&at, kernel));
    // the cluster merge exists in the sm_90a code only (not in the compute_80 PTX)
    return Setup{std::max(1, sms * per_sm), at.binaryVersion >= 90 && hopper_or_later()};
  }();
  Args a{};
  a.x = x;
  a.w = W.w;
  a.sz = W.sz;
  a.bias = bias;
  a.y = y;
  a.n_rows = n_rows;
  a.in = static_cast<int>(W.in);
  a.out = static_cast<int>(W.out);
  a.group_size = static_cast<int>(W.group_size);
  a.n_groups = static_cast<int>(W.n_groups);
  a.n_blocks = static_cast<int>((W.in + 127) / 128);
  a.words_per_row = a.n_blocks * (F == kInt4 ? 16 : 32);
  const int64_t tiles = (W.out + kRows - 1) / kRows;
  const int splits = splits_for(tiles, a.n_blocks, setup.slots, setup.clusters);
  a.cluster_split = splits > 1;
  launch_pdl_clusters(kernel, dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(splits)),
                      dim3(kWarps * 32), dim3(1, static_cast<unsigned>(splits), 1), smem, stream,
                      a);
}

}  // namespace

void quant_wide_linear(const bf16* x, const QuantWeight& W, const bf16* bias, bf16* y, int n_rows,
                       cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(n_rows >= 1 && n_rows <= 64);
  constexpr int kFp8 = int(WeightFormat::fp8);
  const bool wide = n_rows > 32;
  if (W.format == WeightFormat::int4)
    (wide ? launch<kInt4, 64> : launch<kInt4, 32>)(x, W, bias, y, n_rows, stream);
  else if (W.format == WeightFormat::fp8)
    (wide ? launch<kFp8, 64> : launch<kFp8, 32>)(x, W, bias, y, n_rows, stream);
  else
    HOGWILD_CUDA_REQUIRE(!"quant_wide_linear: int4 or fp8 weights");
}

}  // namespace hogwild::cuda
