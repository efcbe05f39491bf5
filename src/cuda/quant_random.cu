// Random packed weights for benchmarks (quant_gemm.h random_quant_weight): the presets'
// projections at real shapes without a checkpoint, made on the device.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "cuda/cuda_check.h"
#include "cuda/quant_gemm.h"

namespace hogwild::cuda {
namespace {

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Random words (fp8: bit 6 of every byte cleared, |value| < 2, no NaN) and one scale (and zero
// point 8) for every group.
__global__ void random_quant_kernel(uint32_t* w, int64_t n_words, uint32_t* sz, int64_t n_sz,
                                    uint32_t sz_value, uint64_t seed, bool fp8) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n_words) {
    const uint32_t r = uint32_t(mix64(seed * 0x100000001b3ull + uint64_t(i)));
    w[i] = fp8 ? (r & 0xbfbfbfbfu) : r;
  }
  if (i < n_sz) sz[i] = sz_value;
}

}  // namespace

QuantWeight random_quant_weight(WeightFormat f, int64_t out, int64_t in, int64_t group_size,
                                uint64_t seed, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(f == WeightFormat::int4 || f == WeightFormat::fp8);
  QuantWeight W;
  W.format = f;
  W.out = out;
  W.in = in;
  W.group_size = group_size;
  W.n_groups = (in + group_size - 1) / group_size;
  const int64_t kb = (in + 127) / 128;
  const int64_t n_words = out * kb * (f == WeightFormat::int4 ? 16 : 32);
  const int64_t n_sz = out * W.n_groups;
  auto alloc = [](int64_t bytes) {
    void* p = nullptr;
    HOGWILD_CUDA_CHECK(cudaMalloc(&p, static_cast<size_t>(bytes)));
    return p;
  };
  W.w = static_cast<uint32_t*>(alloc(n_words * 4));
  W.sz = static_cast<uint32_t*>(alloc(n_sz * 4));
  // int4: (q - 8) s with q uniform in 0..15 has a std of 4.6 s; fp8: |value| < 2, std ~0.6.
  uint32_t szv;
  if (f == WeightFormat::int4) {
    const float s = 1.0f / (4.6f * std::sqrt(float(in)));
    szv = uint32_t(__half_as_ushort(__float2half(s))) |
          (uint32_t(__bfloat16_as_ushort(__float2bfloat16(136.0f))) << 16);
  } else {
    const float s = 1.0f / (0.6f * std::sqrt(float(in)));
    szv = std::bit_cast<uint32_t>(s);
  }
  const int64_t n = std::max(n_words, n_sz);
  random_quant_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
      W.w, n_words, W.sz, n_sz, szv, seed, f == WeightFormat::fp8);
  HOGWILD_CUDA_CHECK(cudaGetLastError());
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream));
  return W;
}

}  // namespace hogwild::cuda
