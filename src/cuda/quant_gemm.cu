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
    if (wide)
      quant_wide_linear(a.x, W, bias, a.y, a.n_rows, stream);
    else if (W.format == WeightFormat::int4)
      launch_rows<int(WeightFormat::int4)>(a, stream);
    else
      launch_rows<int(WeightFormat::fp8)>(a, stream);
  }
}

}  // namespace hogwild::cuda
