// The K loop of a 16-row tile of a packed weight (quant_gemm.h QuantWeight, quant_dequant.cuh)
// times up to 8 token rows: the K loop of skinny_gemm.cu's skinny_quant_round_kernel (the decode
// projections where it measured faster, docs/CUDA.md "Quantized weights"). Include from .cu only.
//
// kWarps warps split the tile's 128-k blocks [b_begin, b_end); lane (g = lane / 4, t = lane % 4)
// holds the packed words of W rows g and g + 8 (quant_dequant.cuh's layout) of kStages blocks in
// registers, loaded before anything else (weights depend on no earlier kernel). The range is
// walked in rounds of kRound = kStages * kWarps blocks: the round's token rows of x and the tile
// rows' scale words are copied into shared memory once (cp.async), so multiplying a block waits on
// shared memory, not on an L2 round trip per block. A block's fp32 product is multiplied by its
// rows' group scales (PB: groups of whole blocks, one scale per block; else per 32-k chunk).
#pragma once

#include "cuda/mma.cuh"
#include "cuda/quant_dequant.cuh"

namespace hogwild::cuda::qtile {

constexpr int kWarps = 4;    // per CTA
constexpr int kStepK = 128;  // k per block
constexpr int kMaxRows = 8;  // token rows (one mma n-tile)
template <int F>
inline constexpr int kStages = F == int(WeightFormat::int4) ? 8 : 4;  // blocks per warp in flight
template <int F>
inline constexpr int kRound = kStages<F>* kWarps;  // blocks per round

/// Shared memory of one round: x as [rows][round k + 32] bf16 (the 64-byte pad puts rows g and
/// g + 1 of a 16-byte load on different banks), then the 16 tile rows' scale words as
/// [16][sz_stride] (odd stride: the rows fall on different banks). rows <= kMaxRows; group_size a
/// multiple of 32.
struct RoundSmem {
  int x_stride;   // bf16 per x row
  int sz_stride;  // words per tile row (>= the groups a round can touch)
  int64_t bytes;  // dynamic shared memory a launch needs
};
template <int F>
__host__ __device__ inline RoundSmem round_smem(int rows, int group_size) {
  RoundSmem s;
  s.x_stride = kRound<F> * kStepK + 32;
  s.sz_stride = ((kRound<F> * kStepK) / group_size + 2) | 1;
  s.bytes = int64_t(rows) * s.x_stride * 2 + 16 * int64_t(s.sz_stride) * 4;
  return s;
}

/// The tile's product over blocks [b_begin, b_end) into c (the mma accumulator fragment: c[0],
/// c[1] W row g, tokens 2t, 2t + 1; c[2], c[3] row g + 8). src: `w(j)` the packed words of tile
/// row j (j = g, g + 8: the row's first word), `sz(j)` the scale words of tile row j (0..15),
/// `x(n)` token row n (n < rows, 16-byte aligned, `in` bf16). rows: 1..kMaxRows; the columns of
/// tokens >= rows are computed from row rows - 1 and are the caller's to discard. between():
/// called by every thread after the weight loads and the first round's scale copies were issued
/// and before x is read (the skinny kernel waits for the previous kernel there). smem:
/// round_smem<F>(rows, group_size).bytes, 16-byte aligned.
template <int F, bool PB, class Src, class Between>
__device__ __forceinline__ void product(const Src& src, int rows, int in, int group_size,
                                        int b_begin, int b_end, unsigned char* smem, float (&c)[4],
                                        Between between) {
  constexpr int S = kStages<F>, R = kRound<F>;
  const RoundSmem L = round_smem<F>(rows, group_size);
  __nv_bfloat16* xs = reinterpret_cast<__nv_bfloat16*>(smem);
  uint32_t* szs = reinterpret_cast<uint32_t*>(smem + int64_t(rows) * L.x_stride * 2);
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const uint32_t* w_lo = src.w(g);
  const uint32_t* w_hi = src.w(g + 8);
  const __nv_bfloat16* xrow = xs + min(g, rows - 1) * L.x_stride + 8 * t;

  auto first_group = [&](int rb) { return rb * kStepK / group_size; };
  auto copy_scales = [&](int rb) {
    const int k_end = min(min(rb + R, b_end) * kStepK, in);
    const int g0 = first_group(rb), n = (k_end - 1) / group_size - g0 + 1;
    for (int i = threadIdx.x; i < 16 * n; i += kWarps * 32) {
      const int j = i / n, o = i % n;
      cp_async4(szs + j * L.sz_stride + o, src.sz(j) + g0 + o);
    }
    cp_async_commit();
  };
  auto copy_x = [&](int rb) {
    const int chunks = (min(rb + R, b_end) - rb) * (kStepK / 8);
    for (int i = threadIdx.x; i < rows * chunks; i += kWarps * 32) {
      const int n = i / chunks, ch = i % chunks, k = rb * kStepK + 8 * ch;
      cp_async16(xs + n * L.x_stride + 8 * ch, src.x(n) + (k < in ? k : 0), k < in);
    }
    cp_async_commit();
  };

  qdev::WBlock<F> buf[S];
#pragma unroll
  for (int i = 0; i < S; ++i)
    if (b_begin + warp + i * kWarps < b_end)
      qdev::load_block<F, true>(w_lo, w_hi, b_begin + warp + i * kWarps, t, buf[i]);
  if (b_begin < b_end) copy_scales(b_begin);
  between();
  if (b_begin < b_end) copy_x(b_begin);

  for (int rb = b_begin; rb < b_end; rb += R) {
    cp_async_wait<0>();
    __syncthreads();
    const int g0 = first_group(rb);
#pragma unroll
    for (int i = 0; i < S; ++i) {
      const int b = rb + warp + i * kWarps;
      if (b >= b_end) break;
      const int kk = (b - rb) * kStepK;        // k of the block within the round
      float cb[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // PB: the block's product before its scale
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const uint4 xv = *reinterpret_cast<const uint4*>(xrow + kk + 32 * u);
        // chunks past `in` (zero x) use the last group copied: their scale words were not
        const int grp =
            min((b * kStepK + 32 * (PB ? 0 : u)) / group_size, (in - 1) / group_size) - g0;
        const uint32_t s_lo = szs[g * L.sz_stride + grp], s_hi = szs[(g + 8) * L.sz_stride + grp];
        uint32_t af[8];
        qdev::chunk_fragments<F>(buf[i], u, qdev::zero_pair(s_lo), qdev::zero_pair(s_hi), af);
        if constexpr (PB) {
          mma_bf16(cb, af[0], af[1], af[2], af[3], xv.x, xv.y);
          mma_bf16(cb, af[4], af[5], af[6], af[7], xv.z, xv.w);
          if (u == 3) {
            const float f_lo = qdev::scale_of(s_lo, F), f_hi = qdev::scale_of(s_hi, F);
            c[0] += cb[0] * f_lo, c[1] += cb[1] * f_lo, c[2] += cb[2] * f_hi, c[3] += cb[3] * f_hi;
          }
        } else {
          const float f_lo = qdev::scale_of(s_lo, F), f_hi = qdev::scale_of(s_hi, F);
          float cu[4] = {0.0f, 0.0f, 0.0f, 0.0f};
          mma_bf16(cu, af[0], af[1], af[2], af[3], xv.x, xv.y);
          mma_bf16(cu, af[4], af[5], af[6], af[7], xv.z, xv.w);
          c[0] += cu[0] * f_lo, c[1] += cu[1] * f_lo, c[2] += cu[2] * f_hi, c[3] += cu[3] * f_hi;
        }
      }
      if (b + R < b_end) qdev::load_block<F, true>(w_lo, w_hi, b + R, t, buf[i]);
    }
    if (rb + R < b_end) {  // every warp is done with this round's x and scales
      __syncthreads();
      copy_scales(rb + R);
      copy_x(rb + R);
    }
  }
}

}  // namespace hogwild::cuda::qtile
