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

  /// Route products of at most kSkinnyMaxRows (8) rows to the skinny tensor-core kernel
  /// (skinny_gemm.h) instead of cuBLAS (measurements in docs/PERFLOG.md).
  void set_skinny(bool on) { skinny_ = on; }
  /// True when products of n_rows rows and in_features `in` go to the skinny kernels.
  bool use_skinny(int64_t n_rows, int64_t in) const;
  /// Three (kSkinnyMaxRows) fp32 slots for the fused norm's sums of squares (skinny_gemm.h
  /// SkinnyNormIn), zeroed at construction; the forward cycles through them.
  float* norm_ring() const { return norm_ring_; }

  /// y (n_rows, out) bf16 = x W^T + bias (bias (out) bf16 or nullptr; fused into the skinny
  /// kernel, a separate add after cuBLAS).
  void linear(const __nv_bfloat16* x, const __nv_bfloat16* W, __nv_bfloat16* y, int64_t n_rows,
              int64_t in, int64_t out, const __nv_bfloat16* bias = nullptr);
  /// act (n_rows, I) = silu(x W_gate^T) * (x W_up^T) for W = [W_gate; W_up] (2 I, in): fused in
  /// the skinny kernel; through cuBLAS into gate_up (n_rows, 2 I) scratch then SwiGLU otherwise.
  void linear_swiglu(const __nv_bfloat16* x, const __nv_bfloat16* W, __nv_bfloat16* gate_up,
                     __nv_bfloat16* act, int64_t n_rows, int64_t in, int64_t intermediate);
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
  float* norm_ring_ = nullptr;
};

}  // namespace hogwild::cuda
