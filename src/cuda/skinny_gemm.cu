// Skinny linear kernel (skinny_gemm.h). Kernels first, launchers second.
#include "cuda/cuda_check.h"
#include "cuda/skinny_gemm.h"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kWarps = 4;  // per CTA

__device__ __forceinline__ void unpack8(const uint4& u, float f[8]) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 v = __bfloat1622float2(h[k]);
    f[2 * k] = v.x;
    f[2 * k + 1] = v.y;
  }
}

// One warp computes R output features for all T rows. Lane l reads 16-byte pieces l, l+32, ...
// of each weight row (two pieces in flight per row per iteration), then the warp reduces.
template <int T, int R>
__global__ void __launch_bounds__(kWarps * 32)
    skinny_kernel(const bf16* __restrict__ x, const bf16* __restrict__ W, bf16* y, float* y_f32,
                  int64_t in, int64_t out) {
  const int lane = threadIdx.x & 31;
  const int64_t o0 = (int64_t(blockIdx.x) * kWarps + threadIdx.x / 32) * R;
  if (o0 >= out) return;
  const int64_t n_pieces = in / 8;
  const uint4* w4[R];
#pragma unroll
  for (int r = 0; r < R; ++r)
    w4[r] = reinterpret_cast<const uint4*>(W + (o0 + r < out ? o0 + r : o0) * in);
  const uint4* x4 = reinterpret_cast<const uint4*>(x);
  float acc[R][T];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < T; ++t) acc[r][t] = 0.0f;

  int64_t p = lane;
  for (; p + 32 < n_pieces; p += 64) {
    uint4 wa[R], wb[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      wa[r] = __ldcs(w4[r] + p);  // streamed once: do not keep in cache
      wb[r] = __ldcs(w4[r] + p + 32);
    }
#pragma unroll
    for (int t = 0; t < T; ++t) {
      float xa[8], xb[8];
      unpack8(__ldg(x4 + t * n_pieces + p), xa);
      unpack8(__ldg(x4 + t * n_pieces + p + 32), xb);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float fa[8], fb[8];
        unpack8(wa[r], fa);
        unpack8(wb[r], fb);
#pragma unroll
        for (int k = 0; k < 8; ++k) acc[r][t] += fa[k] * xa[k] + fb[k] * xb[k];
      }
    }
  }
  for (; p < n_pieces; p += 32) {
    uint4 wa[R];
#pragma unroll
    for (int r = 0; r < R; ++r) wa[r] = __ldcs(w4[r] + p);
#pragma unroll
    for (int t = 0; t < T; ++t) {
      float xa[8];
      unpack8(__ldg(x4 + t * n_pieces + p), xa);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float fa[8];
        unpack8(wa[r], fa);
#pragma unroll
        for (int k = 0; k < 8; ++k) acc[r][t] += fa[k] * xa[k];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < T; ++t)
#pragma unroll
      for (int s = 16; s > 0; s >>= 1) acc[r][t] += __shfl_xor_sync(0xffffffffu, acc[r][t], s);
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (o0 + r >= out) break;
#pragma unroll
      for (int t = 0; t < T; ++t) {
        if (y_f32)
          y_f32[t * out + o0 + r] = acc[r][t];
        else
          y[t * out + o0 + r] = __float2bfloat16(acc[r][t]);
      }
    }
  }
}

template <int T>
void launch(const bf16* x, const bf16* W, bf16* y, float* y_f32, int64_t in, int64_t out,
            cudaStream_t stream) {
  constexpr int R = T <= 2 ? 1 : T <= 4 ? 2 : 4;
  const int64_t warps = (out + R - 1) / R;
  const int64_t blocks = (warps + kWarps - 1) / kWarps;
  skinny_kernel<T, R><<<blocks, kWarps * 32, 0, stream>>>(x, W, y, y_f32, in, out);
}

}  // namespace

bool skinny_supported(int64_t n_rows, int64_t in) {
  return n_rows >= 1 && n_rows <= kSkinnyMaxRows && in % 8 == 0 && in > 0;
}

void skinny_linear(const bf16* x, const bf16* W, bf16* y, float* y_f32, int64_t n_rows, int64_t in,
                   int64_t out, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(skinny_supported(n_rows, in) && out > 0);
  HOGWILD_CUDA_REQUIRE((y == nullptr) != (y_f32 == nullptr));
  HOGWILD_CUDA_REQUIRE(reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(W) % 16 == 0);
  switch (n_rows) {
    case 1:
      launch<1>(x, W, y, y_f32, in, out, stream);
      break;
    case 2:
      launch<2>(x, W, y, y_f32, in, out, stream);
      break;
    case 3:
      launch<3>(x, W, y, y_f32, in, out, stream);
      break;
    case 4:
      launch<4>(x, W, y, y_f32, in, out, stream);
      break;
    case 5:
      launch<5>(x, W, y, y_f32, in, out, stream);
      break;
    case 6:
      launch<6>(x, W, y, y_f32, in, out, stream);
      break;
    case 7:
      launch<7>(x, W, y, y_f32, in, out, stream);
      break;
    default:
      launch<8>(x, W, y, y_f32, in, out, stream);
      break;
  }
  HOGWILD_CUDA_CHECK_LAUNCH();
}

}  // namespace hogwild::cuda
