// Host side of the quantized weights (quant_gemm.h): Int4Weight / Fp8Weight (model/quant.h) into
// the kernel's order, fused row blocks, upload.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <bit>
#include <cstring>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/quant_gemm.h"

namespace hogwild::cuda {

namespace {

// Nibble position p of a kernel word holds k offset kInt4Order[p] (quant_gemm.cu int4_pairs).
constexpr int kInt4Order[8] = {0, 2, 4, 6, 1, 3, 5, 7};

}  // namespace

QuantWeightHost repack_int4(const Int4Weight& w) {
  if (w.group_size <= 0 || w.group_size % 32 != 0)
    fail(
        "int4 weight ({} x {}): group size {} is not a multiple of 32; the CUDA backend reads "
        "groups of 32, 64, 128, ... (or one group per row); use --device cpu",
        w.out, w.in, w.group_size);
  HOGWILD_CHECK(w.in % 8 == 0 && w.in % w.group_size == 0);
  QuantWeightHost h;
  h.format = WeightFormat::int4;
  h.out = w.out;
  h.in = w.in;
  h.group_size = w.group_size;
  h.n_groups = w.in / w.group_size;
  const int64_t kb = (w.in + 127) / 128, words = kb * 16, in_words = w.in / 8;
  h.w.assign(static_cast<size_t>(w.out * words), 0u);
  for (int64_t o = 0; o < w.out; ++o) {
    const uint32_t* src = w.packed.data() + o * in_words;
    uint32_t* dst = h.w.data() + o * words;
    for (int64_t j = 0; j < in_words; ++j) {  // source word j: k = 8 j .. 8 j + 7, nibble e = k
      const int64_t b = j / 16, u = (j % 16) / 4, t = j % 4;  // k = 128 b + 32 u + 8 t
      uint32_t v = 0;
      for (int p = 0; p < 8; ++p) v |= ((src[j] >> (4 * kInt4Order[p])) & 0xfu) << (4 * p);
      dst[b * 16 + 4 * t + u] = v;
    }
  }
  h.sz.resize(static_cast<size_t>(w.out * h.n_groups));
  for (size_t i = 0; i < h.sz.size(); ++i) {
    const uint16_t s = __half_as_ushort(__float2half_rn(w.scales[i]));
    if (__half2float(__ushort_as_half(s)) != w.scales[i] || w.zeros[i] < 0 || w.zeros[i] > 16)
      fail(
          "int4 weight ({} x {}): scale {} or zero point {} of group {} is not an fp16 scale and "
          "a zero point in 0..16 as AWQ and GPTQ store them",
          w.out, w.in, w.scales[i], w.zeros[i], i);
    const uint16_t z = __bfloat16_as_ushort(__float2bfloat16(128.0f + w.zeros[i]));
    h.sz[i] = uint32_t(s) | (uint32_t(z) << 16);
  }
  h.perm = w.perm;
  return h;
}

QuantWeightHost repack_fp8(const Fp8Weight& w) {
  if (w.block_k <= 0 || w.block_k % 32 != 0 || w.block_n <= 0)
    fail(
        "fp8 weight ({} x {}): weight_block_size [{}, {}]: the CUDA backend needs a block_k that "
        "is a multiple of 32; use --device cpu",
        w.out, w.in, w.block_n, w.block_k);
  HOGWILD_CHECK(w.in % 8 == 0);
  QuantWeightHost h;
  h.format = WeightFormat::fp8;
  h.out = w.out;
  h.in = w.in;
  h.group_size = w.block_k;
  h.n_groups = (w.in + w.block_k - 1) / w.block_k;
  const int64_t kb = (w.in + 127) / 128, words = kb * 32;
  h.w.assign(static_cast<size_t>(w.out * words), 0u);
  for (int64_t o = 0; o < w.out; ++o) {
    auto* dst = reinterpret_cast<uint8_t*>(h.w.data() + o * words);
    const uint8_t* src = w.w.data() + o * w.in;
    for (int64_t k = 0; k < w.in; ++k) {
      const int64_t b = k / 128, u = (k % 128) / 32, t = (k % 32) / 8, e = k % 8;
      dst[b * 128 + 32 * t + 8 * u + e] = src[k];
    }
  }
  h.sz.resize(static_cast<size_t>(w.out * h.n_groups));
  const int64_t n_kb = (w.in + w.block_k - 1) / w.block_k;
  for (int64_t o = 0; o < w.out; ++o)
    for (int64_t g = 0; g < h.n_groups; ++g)
      h.sz[o * h.n_groups + g] = std::bit_cast<uint32_t>(w.scale_inv[(o / w.block_n) * n_kb + g]);
  return h;
}

QuantWeightHost concat_rows(const std::vector<const QuantWeightHost*>& parts) {
  HOGWILD_CHECK(!parts.empty());
  QuantWeightHost h = *parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const QuantWeightHost& p = *parts[i];
    if (p.format != h.format || p.in != h.in || p.group_size != h.group_size)
      fail(
          "the fused projections of one input are stored in different formats or group sizes; "
          "the CUDA backend needs them alike (use --device cpu)");
    if (p.perm != h.perm)
      fail(
          "the fused projections of one input have different act-order permutations (g_idx); "
          "the CUDA backend needs them equal, as GPTQ makes them for layers sharing an input "
          "(use --device cpu)");
    h.out += p.out;
    h.w.insert(h.w.end(), p.w.begin(), p.w.end());
    h.sz.insert(h.sz.end(), p.sz.begin(), p.sz.end());
  }
  return h;
}

QuantWeight upload_quant_weight(const QuantWeightHost& h, cudaStream_t stream) {
  QuantWeight W;
  W.format = h.format;
  W.out = h.out;
  W.in = h.in;
  W.group_size = h.group_size;
  W.n_groups = h.n_groups;
  auto put = [&](const void* src, size_t bytes) {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess)
      fail(
          "out of GPU memory allocating {} MiB of quantized weights ({}); use a GPU with more "
          "memory",
          bytes >> 20, cudaGetErrorName(e));
    HOGWILD_CUDA_CHECK(cudaMemcpyAsync(p, src, bytes, cudaMemcpyHostToDevice, stream));
    return p;
  };
  W.w = static_cast<uint32_t*>(put(h.w.data(), h.w.size() * 4));
  W.sz = static_cast<uint32_t*>(put(h.sz.data(), h.sz.size() * 4));
  if (!h.perm.empty()) W.perm = static_cast<int32_t*>(put(h.perm.data(), h.perm.size() * 4));
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream));
  return W;
}

void free_quant_weight(QuantWeight& w) {
  cudaFree(w.w);
  cudaFree(w.sz);
  cudaFree(w.perm);
  w = QuantWeight{};
}

}  // namespace hogwild::cuda
