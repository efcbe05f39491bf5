// Shared code of the CUDA tests: skip without a GPU, device buffers, bf16 rounding, error norms.
#pragma once

#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "model/weights.h"

namespace hogwild::test {

#define HOGWILD_REQUIRE_GPU()                                                     \
  do {                                                                            \
    if (!::hogwild::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA GPU"; \
  } while (0)

/// Owning device array of n T's.
template <typename T>
struct DeviceArray {
  T* p = nullptr;
  size_t n = 0;
  explicit DeviceArray(size_t count) : n(count) {
    HOGWILD_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
  }
  explicit DeviceArray(const std::vector<T>& h) : DeviceArray(h.size()) { upload(h); }
  ~DeviceArray() { cudaFree(p); }
  DeviceArray(const DeviceArray&) = delete;
  void upload(const std::vector<T>& h) {
    HOGWILD_CUDA_CHECK(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> h(n);
    HOGWILD_CUDA_CHECK(cudaDeviceSynchronize());
    HOGWILD_CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

inline std::vector<__nv_bfloat16> to_bf16(const std::vector<float>& x) {
  std::vector<__nv_bfloat16> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = __float2bfloat16(x[i]);
  return y;
}
inline std::vector<float> to_f32(const std::vector<__nv_bfloat16>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = __bfloat162float(x[i]);
  return y;
}
/// Rounds every value to the nearest bf16 (so CPU twins see exactly the GPU's inputs).
inline std::vector<float> round_bf16(std::vector<float> x) {
  for (float& v : x) v = __bfloat162float(__float2bfloat16(v));
  return x;
}

/// ||a - b|| / ||b|| over n values from a and b (fp32 arrays); NaN -> infinity.
/// Rounds every weight of w to bf16 (round to nearest even): the weights the GPU holds, for the
/// CPU references the CUDA tests compare against.
inline void round_weights_bf16(ModelWeights& w) {
  auto r = [](std::vector<float>& v) { v = round_bf16(std::move(v)); };
  r(w.embed_tokens), r(w.norm), r(w.lm_head);
  for (LayerWeights& L : w.layers) {
    for (auto* v : {&L.input_layernorm, &L.q_proj, &L.k_proj, &L.v_proj, &L.q_bias, &L.k_bias,
                    &L.v_bias, &L.q_norm, &L.k_norm, &L.o_proj, &L.post_attention_layernorm,
                    &L.gate_proj, &L.up_proj, &L.down_proj, &L.router})
      r(*v);
    for (ExpertWeights& e : L.experts) r(e.gate_proj), r(e.up_proj), r(e.down_proj);
  }
}

inline double rel_error(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}
inline double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  return rel_error(a.data(), b.data(), std::min(a.size(), b.size()));
}

}  // namespace hogwild::test
