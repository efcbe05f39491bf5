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

// The residual-stream norm where the projections do not fuse it (forwards beyond the skinny
// kernels' 8 rows; layer 0's input norm and the final norm): one CTA of kNormThreads per row, each
// thread holding its kVec float4 of the row in registers between the sum of squares and the output,
// so the row is read once and the CTA meets at one barrier (the CTA-per-row kernel above reads it
// twice around two barriers: ~5.9 us per launch at 64 rows of 4096). w's loads are issued before
// pdl_wait (a weight, written by no kernel). PRECONDITION: dim % 4 == 0, dim <= kNormThreads * 4 *
// kVec, x 16-byte and add, w, y 8-byte aligned.
constexpr int kNormThreads = 256;

template <int kVec>
__global__ void __launch_bounds__(kNormThreads)
    rmsnorm_rows_reg_kernel(float* x, const bf16* add, const bf16* w, bf16* y, int dim, float eps) {
  __shared__ float partial[kNormThreads / 32];
  uint2 wv[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const int i = 4 * (threadIdx.x + j * kNormThreads);
    wv[j] = i < dim ? *reinterpret_cast<const uint2*>(w + i) : make_uint2(0, 0);
  }
  pdl_wait();
  pdl_launch_dependents();
  float* xr = x + int64_t(blockIdx.x) * dim;
  float4 v[kVec];
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const int i = 4 * (threadIdx.x + j * kNormThreads);
    v[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (i >= dim) continue;
    v[j] = *reinterpret_cast<const float4*>(xr + i);
    if (add != nullptr) {
      const uint2 a = *reinterpret_cast<const uint2*>(add + int64_t(blockIdx.x) * dim + i);
      const float2 a01 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&a.x));
      const float2 a23 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&a.y));
      v[j].x += a01.x, v[j].y += a01.y, v[j].z += a23.x, v[j].w += a23.y;
      *reinterpret_cast<float4*>(xr + i) = v[j];
    }
    ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
  }
  ss = warp_sum(ss);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = ss;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int k = 0; k < kNormThreads / 32; ++k) total += partial[k];
  const float r = rsqrtf(total / float(dim) + eps);
  bf16* yr = y + int64_t(blockIdx.x) * dim;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const int i = 4 * (threadIdx.x + j * kNormThreads);
    if (i >= dim) continue;
    const float2 w01 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&wv[j].x));
    const float2 w23 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&wv[j].y));
    const __nv_bfloat162 o01 = __floats2bfloat162_rn(v[j].x * r * w01.x, v[j].y * r * w01.y);
    const __nv_bfloat162 o23 = __floats2bfloat162_rn(v[j].z * r * w23.x, v[j].w * r * w23.y);
    uint2 o;
    o.x = *reinterpret_cast<const uint32_t*>(&o01);
    o.y = *reinterpret_cast<const uint32_t*>(&o23);
    *reinterpret_cast<uint2*>(yr + i) = o;
  }
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

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// x += add (when add != nullptr), y = rmsnorm(x) * w: the register kernel where the shape and
// alignment allow it, else the CTA-per-row kernel. Either way each element gets the same
// operations; only the order in which the sum of squares is added differs.
void launch_rows(float* x, const bf16* add, const bf16* w, bf16* y, int64_t n_rows, int64_t dim,
                 float eps, cudaStream_t stream) {
  const int64_t vecs = (dim + 4 * kNormThreads - 1) / (4 * kNormThreads);
  if (dim % 4 == 0 && vecs <= 8 && aligned(x, 16) && aligned(w, 8) && aligned(y, 8) &&
      (add == nullptr || aligned(add, 8))) {
    const int d = static_cast<int>(dim);
    const dim3 grid(static_cast<unsigned>(n_rows)), block(kNormThreads);
    if (vecs <= 1)
      launch_pdl(rmsnorm_rows_reg_kernel<1>, grid, block, 0, stream, x, add, w, y, d, eps);
    else if (vecs <= 2)
      launch_pdl(rmsnorm_rows_reg_kernel<2>, grid, block, 0, stream, x, add, w, y, d, eps);
    else if (vecs <= 4)
      launch_pdl(rmsnorm_rows_reg_kernel<4>, grid, block, 0, stream, x, add, w, y, d, eps);
    else
      launch_pdl(rmsnorm_rows_reg_kernel<8>, grid, block, 0, stream, x, add, w, y, d, eps);
    return;
  }
  const int threads = dim >= 4096 ? 1024 : dim >= 1024 ? 512 : 128;
  launch_pdl(rmsnorm_rows_kernel, dim3(n_rows), dim3(threads), 0, stream, x, add, w, y, dim, eps);
}

}  // namespace

void rmsnorm(const float* x, const bf16* w, bf16* y, int64_t n_rows, int64_t dim, float eps,
             cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(dim > 0 && n_rows >= 0);
  if (n_rows == 0) return;
  // x is only read when add == nullptr.
  launch_rows(const_cast<float*>(x), nullptr, w, y, n_rows, dim, eps, stream);
}

void add_rmsnorm(float* x, const bf16* y, const bf16* w, bf16* out, int64_t n_rows, int64_t dim,
                 float eps, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(dim > 0 && n_rows >= 0 && y != nullptr);
  if (n_rows == 0) return;
  launch_rows(x, y, w, out, n_rows, dim, eps, stream);
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
