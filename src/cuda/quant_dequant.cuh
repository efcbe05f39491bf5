// Device side of the packed weight formats (quant_gemm.h QuantWeight), shared by the kernels that
// multiply by them (quant_gemm.cu, skinny_gemm.cu): one 128-k block of two weight rows as a lane
// loads it, and its conversion into exact bf16 mma.sync A fragments. Include from .cu only.
//
// In a block, lane (g = lane / 4, t = lane % 4) holds for u < 4 the eight values
// k = 32 u + 8 t + e (e < 8) of W rows g and g + 8: one 16-byte load per row for int4, two for fp8.
// The eight values feed two mma.sync m16n8k16 as physical elements 0-3 and 4-7, the same
// permutation of the 32-wide chunk u as the skinny kernel applies to bf16 weights, so a dot
// product pairs each weight with its own x.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/mma.cuh"
#include "model/quant.h"

namespace hogwild::cuda::qdev {

__device__ __forceinline__ uint32_t lop3_and_or(uint32_t a, uint32_t mask, uint32_t bits) {
  uint32_t r;  // (a & mask) | bits
  asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(r) : "r"(a), "r"(mask), "r"(bits));
  return r;
}

__device__ __forceinline__ uint32_t bsub2(uint32_t a, uint32_t b) {
  __nv_bfloat162 r =
      __hsub2(*reinterpret_cast<__nv_bfloat162*>(&a), *reinterpret_cast<__nv_bfloat162*>(&b));
  return *reinterpret_cast<uint32_t*>(&r);
}

// One int4 word (nibble p holds k offset {0,2,4,6,1,3,5,7}[p]) -> the four bf16 pairs (k 0,1),
// (2,3), (4,5), (6,7) of q - z; zz = bf16x2(128 + z, 128 + z). 0x4300 | q is the bf16 number
// 128 + q, so the subtraction is exact.
__device__ __forceinline__ void int4_pairs(uint32_t q, uint32_t zz, uint32_t p[4]) {
  p[0] = bsub2(lop3_and_or(q, 0x000f000fu, 0x43004300u), zz);
  p[1] = bsub2(lop3_and_or(q >> 4, 0x000f000fu, 0x43004300u), zz);
  p[2] = bsub2(lop3_and_or(q >> 8, 0x000f000fu, 0x43004300u), zz);
  p[3] = bsub2(lop3_and_or(q >> 12, 0x000f000fu, 0x43004300u), zz);
}

// Two e4m3 bytes (bytes 0 and 1 of v) -> bf16x2 of their exact values. The magnitude bits shifted
// into bf16's exponent/mantissa give the value times 2^-120 (e4m3 subnormals become bf16
// subnormals); one exact multiply by 2^120 restores it.
__device__ __forceinline__ uint32_t fp8_pair(uint32_t v) {
  const uint32_t x = __byte_perm(v, 0u, 0x4140);  // byte 0 -> bits 0-7, byte 1 -> bits 16-23
  const uint32_t bits = ((x << 8) & 0x80008000u) | ((x << 4) & 0x07f007f0u);
  const __nv_bfloat162 scale = __floats2bfloat162_rn(0x1p120f, 0x1p120f);
  __nv_bfloat162 r = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&bits), scale);
  return *reinterpret_cast<uint32_t*>(&r);
}

template <int F>
struct WBlock;  // one K block of rows g and g + 8, as the lane loads it
template <>
struct WBlock<int(WeightFormat::int4)> {
  uint4 lo, hi;
};
template <>
struct WBlock<int(WeightFormat::fp8)> {
  uint4 lo[2], hi[2];
};

/// Block b of rows w_lo, w_hi (the rows' first words) into wb; t = lane % 4. Ordered: volatile
/// loads (mma.cuh ld_stream_ordered).
template <int F, bool Ordered = false>
__device__ __forceinline__ void load_block(const uint32_t* w_lo, const uint32_t* w_hi, int b, int t,
                                           WBlock<F>& wb) {
  auto ld = [](const uint32_t* p) {
    if constexpr (Ordered)
      return ld_stream_ordered(p);
    else
      return ld_stream(p);
  };
  if constexpr (F == int(WeightFormat::int4)) {
    wb.lo = ld(w_lo + b * 16 + 4 * t);
    wb.hi = ld(w_hi + b * 16 + 4 * t);
  } else {
    wb.lo[0] = ld(w_lo + b * 32 + 8 * t);
    wb.lo[1] = ld(w_lo + b * 32 + 8 * t + 4);
    wb.hi[0] = ld(w_hi + b * 32 + 8 * t);
    wb.hi[1] = ld(w_hi + b * 32 + 8 * t + 4);
  }
}

__device__ __forceinline__ uint32_t word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/// The A fragments of chunk u (rows lo, hi): a[0..3] for elements 0-3, a[4..7] for 4-7. zz_*: the
/// rows' bf16x2(128 + z) (int4; unused for fp8).
template <int F>
__device__ __forceinline__ void chunk_fragments(const WBlock<F>& wb, int u, uint32_t zz_lo,
                                                uint32_t zz_hi, uint32_t a[8]) {
  if constexpr (F == int(WeightFormat::int4)) {
    uint32_t pl[4], ph[4];
    int4_pairs(word(wb.lo, u), zz_lo, pl);
    int4_pairs(word(wb.hi, u), zz_hi, ph);
    a[0] = pl[0], a[1] = ph[0], a[2] = pl[1], a[3] = ph[1];
    a[4] = pl[2], a[5] = ph[2], a[6] = pl[3], a[7] = ph[3];
  } else {
    // bytes 8 u .. 8 u + 7 of the lane's 32: words 2 u, 2 u + 1
    const uint4& l = wb.lo[u / 2];
    const uint4& h = wb.hi[u / 2];
    const uint32_t l0 = (u & 1) ? l.z : l.x, l1 = (u & 1) ? l.w : l.y;
    const uint32_t h0 = (u & 1) ? h.z : h.x, h1 = (u & 1) ? h.w : h.y;
    a[0] = fp8_pair(l0), a[1] = fp8_pair(h0), a[2] = fp8_pair(l0 >> 16), a[3] = fp8_pair(h0 >> 16);
    a[4] = fp8_pair(l1), a[5] = fp8_pair(h1), a[6] = fp8_pair(l1 >> 16), a[7] = fp8_pair(h1 >> 16);
  }
}

/// The scale of a packed (scale, zero point) word: int4: its fp16 low half; fp8: the fp32 word.
__device__ __forceinline__ float scale_of(uint32_t sz, int F) {
  if (F == int(WeightFormat::int4)) return __half2float(__ushort_as_half(uint16_t(sz & 0xffffu)));
  return __uint_as_float(sz);
}

/// bf16x2(128 + z, 128 + z) of an int4 (scale, zero point) word.
__device__ __forceinline__ uint32_t zero_pair(uint32_t sz) {
  return (sz & 0xffff0000u) | (sz >> 16);
}

/// One 32-k chunk of a 16 x 8 output tile: the two m16n8k16 products of the weight fragments af
/// (chunk_fragments) with one token row's x words xv (8 bf16, this thread's k), in fp32. PB
/// (groups of whole 128-k blocks): the product goes unscaled into cb, which block_scaled adds to
/// acc once per block; otherwise acc += product x (f_lo, f_lo, f_hi, f_hi), the chunk's group
/// scales of W rows g and g + 8. The quantized tile kernels (quant_gemm.cu, moe.cu) share it.
template <bool PB>
__device__ __forceinline__ void chunk_product(float (&acc)[4], float (&cb)[4],
                                              const uint32_t (&af)[8], uint4 xv, float f_lo,
                                              float f_hi) {
  if constexpr (PB) {
    mma_bf16(cb, af[0], af[1], af[2], af[3], xv.x, xv.y);
    mma_bf16(cb, af[4], af[5], af[6], af[7], xv.z, xv.w);
  } else {
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma_bf16(c, af[0], af[1], af[2], af[3], xv.x, xv.y);
    mma_bf16(c, af[4], af[5], af[6], af[7], xv.z, xv.w);
    acc[0] += c[0] * f_lo, acc[1] += c[1] * f_lo;
    acc[2] += c[2] * f_hi, acc[3] += c[3] * f_hi;
  }
}

/// PB: a block's unscaled products cb[j] added to acc[j] with the block's scales (see
/// chunk_product), for NT token tiles.
template <int NT>
__device__ __forceinline__ void block_scaled(float (&acc)[NT][4], const float (&cb)[NT][4],
                                             float f_lo, float f_hi) {
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    acc[j][0] += cb[j][0] * f_lo, acc[j][1] += cb[j][1] * f_lo;
    acc[j][2] += cb[j][2] * f_hi, acc[j][3] += cb[j][3] * f_hi;
  }
}

}  // namespace hogwild::cuda::qdev
