// RMSNorm kernels (norm.h). Kernels first, launchers second.
#include "cuda/norm.h"
#include "cuda/pdl.cuh"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One CTA per row; blockDim.x a multiple of 32 (<= 1024). With add != nullptr, first x += add
// (each thread updates the elements it later normalises, so no extra barrier is needed).
__global__ void rmsnorm_rows_kernel(float* x, const bf16* add, const bf16* w, bf16* y, int64_t dim,
                                    float eps) {
  __shared__ float partial[32];
  pdl_wait();
  pdl_launch_dependents();
  float* xr = x + blockIdx.x * dim;
  float ss = 0.0f;
  if (add != nullptr) {
    const bf16* ar = add + blockIdx.x * dim;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
      const float v = xr[i] + __bfloat162float(ar[i]);
      xr[i] = v;
      ss += v * v;
    }
  } else {
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
  }
  ss = warp_sum(ss);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
    v = warp_sum(v);
    if (threadIdx.x == 0) partial[0] = v;
  }
  __syncthreads();
  const float r = rsqrtf(partial[0] / float(dim) + eps);
  bf16* yr = y + blockIdx.x * dim;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x)
    yr[i] = __float2bfloat16(xr[i] * r * __bfloat162float(w[i]));
}

// One warp per head row.
// Heads [0, n_w1) of a token use w1, the rest w2.
__global__ void rmsnorm_heads_kernel(bf16* x, int64_t token_stride, int64_t n_heads, int64_t n_rows,
                                     const bf16* w1, int64_t n_w1, const bf16* w2, int64_t dim,
                                     float eps) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t row = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
  if (row >= n_rows) return;
  const bf16* w = (row % n_heads) < n_w1 ? w1 : w2;
  const int lane = threadIdx.x & 31;
  bf16* xr = x + (row / n_heads) * token_stride + (row % n_heads) * dim;
  float v[32];  // dim <= 1024
  float ss = 0.0f;
#pragma unroll
  for (int k = 0; k < 32; ++k) {
    const int64_t i = lane + 32 * k;
    v[k] = i < dim ? __bfloat162float(xr[i]) : 0.0f;
    ss += v[k] * v[k];
  }
  ss = warp_sum(ss);
  const float r = rsqrtf(ss / float(dim) + eps);
#pragma unroll
  for (int k = 0; k < 32; ++k) {
    const int64_t i = lane + 32 * k;
    if (i < dim) xr[i] = __float2bfloat16(v[k] * r * __bfloat162float(w[i]));
  }
}

}  // namespace

void rmsnorm(const float* x, const bf16* w, bf16* y, int64_t n_rows, int64_t dim, float eps,
             cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(dim > 0 && n_rows >= 0);
  if (n_rows == 0) return;
  const int threads = dim >= 4096 ? 1024 : dim >= 1024 ? 512 : 128;
  // x is only read when add == nullptr.
  launch_pdl(rmsnorm_rows_kernel, dim3(n_rows), dim3(threads), 0, stream, const_cast<float*>(x),
             static_cast<const bf16*>(nullptr), w, y, dim, eps);
}

void add_rmsnorm(float* x, const bf16* y, const bf16* w, bf16* out, int64_t n_rows, int64_t dim,
                 float eps, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(dim > 0 && n_rows >= 0 && y != nullptr);
  if (n_rows == 0) return;
  const int threads = dim >= 4096 ? 1024 : dim >= 1024 ? 512 : 128;
  launch_pdl(rmsnorm_rows_kernel, dim3(n_rows), dim3(threads), 0, stream, x, y, w, out, dim, eps);
}

void rmsnorm_qk_heads(bf16* x, int64_t token_stride, int64_t n_tokens, int64_t n_q, int64_t n_k,
                      const bf16* w_q, const bf16* w_k, int64_t dim, float eps,
                      cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(dim > 0 && dim <= 1024 && n_q > 0 && n_k > 0 &&
                       token_stride >= (n_q + n_k) * dim);
  const int64_t n_rows = n_tokens * (n_q + n_k);
  if (n_rows == 0) return;
  constexpr int kWarps = 8;
  const int64_t blocks = (n_rows + kWarps - 1) / kWarps;
  launch_pdl(rmsnorm_heads_kernel, dim3(blocks), dim3(kWarps * 32), 0, stream, x, token_stride,
             n_q + n_k, n_rows, w_q, n_q, w_k, dim, eps);
}

void rmsnorm_heads(bf16* x, int64_t token_stride, int64_t n_tokens, int64_t n_heads, const bf16* w,
                   int64_t dim, float eps, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(dim > 0 && dim <= 1024 && n_heads > 0 && token_stride >= n_heads * dim);
  const int64_t n_rows = n_tokens * n_heads;
  if (n_rows == 0) return;
  constexpr int kWarps = 8;
  const int64_t blocks = (n_rows + kWarps - 1) / kWarps;
  launch_pdl(rmsnorm_heads_kernel, dim3(blocks), dim3(kWarps * 32), 0, stream, x, token_stride,
             n_heads, n_rows, w, n_heads, w, dim, eps);
}

}  // namespace hogwild::cuda
