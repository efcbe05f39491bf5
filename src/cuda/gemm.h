// Linear layers through cuBLAS: y = x W^T with W (out_features, in_features) row-major as HF
// stores nn.Linear weights, x (n_rows, in_features) bf16, fp32 accumulation (CUBLAS_COMPUTE_32F).
// CPU twin: hogwild::cpu::matmul (src/cpu/ops.h).
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hogwild::cuda {

/// A cuBLAS handle bound to a stream with its own workspace (so GEMMs can be captured in a CUDA
/// graph). Not copyable.
class Gemm {
 public:
  explicit Gemm(cudaStream_t stream);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  /// Route products of at most kSkinnyRows rows to the skinny kernel (skinny_gemm.h) instead of
  /// cuBLAS. Measured on an H200 (Qwen3-8B decode step, docs/CUDA.md): skinny is faster at 1-2
  /// rows (5.28 vs 5.72 ms, 5.51 vs 5.81 ms), cuBLAS from 3 rows on (5.91 vs 5.99 ms).
  void set_skinny(bool on) { skinny_ = on; }
  static constexpr int64_t kSkinnyRows = 2;

  /// y (n_rows, out) bf16 = x W^T.
  void linear(const __nv_bfloat16* x, const __nv_bfloat16* W, __nv_bfloat16* y, int64_t n_rows,
              int64_t in, int64_t out);
  /// y (n_rows, out) fp32 = x W^T (logits).
  void linear_f32(const __nv_bfloat16* x, const __nv_bfloat16* W, float* y, int64_t n_rows,
                  int64_t in, int64_t out);

 private:
  void run(const __nv_bfloat16* x, const __nv_bfloat16* W, void* y, cudaDataType y_type,
           int64_t n_rows, int64_t in, int64_t out);
  cublasHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool skinny_ = true;
};

}  // namespace hogwild::cuda
