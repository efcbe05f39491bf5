// Element-wise ops (elementwise.h). Kernels first, launchers second.
#include "cuda/elementwise.h"
#include "cuda/pdl.cuh"

namespace hogwild::cuda {
namespace {

constexpr int kThreads = 256;

int64_t blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b);
}

__global__ void embedding_kernel(const bf16* table, const int32_t* ids, int64_t hidden,
                                 int64_t vocab, float* out) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t t = blockIdx.x;
  const int32_t id = ids[t];
  const bool ok = id >= 0 && id < vocab;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x)
    out[t * hidden + i] = ok ? __bfloat162float(table[id * hidden + i]) : 0.0f;
}

__global__ void add_residual_kernel(float* x, const bf16* y, int64_t n) {
  pdl_wait();
  pdl_launch_dependents();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] += __bfloat162float(y[i]);
}

__global__ void add_bias_kernel(bf16* y, const bf16* bias, int64_t n, int64_t cols) {
  pdl_wait();
  pdl_launch_dependents();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16(__bfloat162float(y[i]) + __bfloat162float(bias[i % cols]));
}

__device__ __forceinline__ bf16 silu_mul(bf16 g, bf16 u) {
  const float gf = __bfloat162float(g);
  return __float2bfloat16(gf / (1.0f + __expf(-gf)) * __bfloat162float(u));
}

// Row blockIdx.y; `per_thread` consecutive columns per thread: 8 (one 16-byte load of gate and of
// up, one store) when n % 8 == 0, else 1. Each element is the same computation either way.
__global__ void swiglu_kernel(const bf16* gate_up, bf16* out, int64_t n, int per_thread) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t c0 = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * per_thread;
  if (c0 >= n) return;
  const bf16* g = gate_up + int64_t(blockIdx.y) * 2 * n;
  const bf16* u = g + n;
  bf16* o = out + int64_t(blockIdx.y) * n;
  if (per_thread == 1) {
    o[c0] = silu_mul(g[c0], u[c0]);
    return;
  }
  const uint4 gv = *reinterpret_cast<const uint4*>(g + c0);
  const uint4 uv = *reinterpret_cast<const uint4*>(u + c0);
  const bf16* ga = reinterpret_cast<const bf16*>(&gv);
  const bf16* ua = reinterpret_cast<const bf16*>(&uv);
  alignas(16) bf16 r[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) r[k] = silu_mul(ga[k], ua[k]);
  *reinterpret_cast<uint4*>(o + c0) = *reinterpret_cast<const uint4*>(r);
}

__global__ void gather_rows_kernel(const float* x, const int32_t* rows, int64_t cols, float* out) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t r = blockIdx.x;
  const int64_t src = rows[r];
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) out[r * cols + i] = x[src * cols + i];
}

__global__ void f32_to_bf16_kernel(const float* x, bf16* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16(x[i]);
}

__global__ void bf16_to_f32_kernel(const bf16* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __bfloat162float(x[i]);
}

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__global__ void fill_uniform_kernel(bf16* x, int64_t n, uint64_t seed, float scale, float center) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t h = mix64(seed * 0x9e3779b97f4a7c15ULL + uint64_t(i) + 1);
    const float u = float(h >> 40) * 0x1.0p-24f * 2.0f - 1.0f;
    x[i] = __float2bfloat16(center + scale * u);
  }
}

}  // namespace

void embedding(const bf16* table, const int32_t* ids, int64_t n_tokens, int64_t hidden_size,
               int64_t vocab_size, float* out, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(n_tokens >= 0 && hidden_size > 0);
  if (n_tokens == 0) return;
  launch_pdl(embedding_kernel, dim3(n_tokens), dim3(kThreads), 0, stream, table, ids, hidden_size,
             vocab_size, out);
}

void add_residual(float* x, const bf16* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  launch_pdl(add_residual_kernel, dim3(blocks_for(n)), dim3(kThreads), 0, stream, x, y, n);
}

void add_bias(bf16* y, const bf16* bias, int64_t n_rows, int64_t n_cols, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(n_cols > 0);
  if (n_rows == 0) return;
  launch_pdl(add_bias_kernel, dim3(blocks_for(n_rows * n_cols)), dim3(kThreads), 0, stream, y, bias,
             n_rows * n_cols, n_cols);
}

void swiglu(const bf16* gate_up, bf16* out, int64_t n_rows, int64_t n, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(n > 0);
  if (n_rows == 0) return;
  HOGWILD_CUDA_REQUIRE(n_rows <= 65535);
  // 16-byte accesses need n % 8 == 0 (rows then start 16-byte aligned: cudaMalloc'd buffers).
  const int per_thread = n % 8 == 0 && reinterpret_cast<uintptr_t>(gate_up) % 16 == 0 &&
                                 reinterpret_cast<uintptr_t>(out) % 16 == 0
                             ? 8
                             : 1;
  const int64_t per_block = int64_t(kThreads) * per_thread;
  launch_pdl(
      swiglu_kernel,
      dim3(static_cast<unsigned>((n + per_block - 1) / per_block), static_cast<unsigned>(n_rows)),
      dim3(kThreads), 0, stream, gate_up, out, n, per_thread);
}

void gather_rows(const float* x, const int32_t* rows, int64_t n_rows, int64_t n_cols, float* out,
                 cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(n_cols > 0);
  if (n_rows == 0) return;
  launch_pdl(gather_rows_kernel, dim3(n_rows), dim3(kThreads), 0, stream, x, rows, n_cols, out);
}

void f32_to_bf16(const float* x, bf16* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  f32_to_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
  HOGWILD_CUDA_CHECK_LAUNCH();
}

void bf16_to_f32(const bf16* x, float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  bf16_to_f32_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
  HOGWILD_CUDA_CHECK_LAUNCH();
}

void fill_uniform_bf16(bf16* x, int64_t n, uint64_t seed, float scale, float center,
                       cudaStream_t stream) {
  if (n == 0) return;
  fill_uniform_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, seed, scale, center);
  HOGWILD_CUDA_CHECK_LAUNCH();
}

}  // namespace hogwild::cuda
