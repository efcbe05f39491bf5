// cuBLAS linear layers (gemm.h).
#include "cuda/gemm.h"

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/elementwise.h"
#include "cuda/skinny_gemm.h"

namespace hogwild::cuda {

namespace {
constexpr size_t kWorkspaceBytes = 32u << 20;  // cuBLAS recommends >= 32 MiB on Hopper
}

Gemm::Gemm(cudaStream_t stream) : stream_(stream) {
  HOGWILD_CUBLAS_CHECK(cublasCreate(&handle_));
  HOGWILD_CUBLAS_CHECK(cublasSetStream(handle_, stream));
  HOGWILD_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
  HOGWILD_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_, kWorkspaceBytes));
  HOGWILD_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
  HOGWILD_CUDA_CHECK(cudaMalloc(&norm_ring_, 3 * kSkinnyMaxRows * sizeof(float)));
  HOGWILD_CUDA_CHECK(cudaMemsetAsync(norm_ring_, 0, 3 * kSkinnyMaxRows * sizeof(float), stream));
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream));
}

Gemm::~Gemm() {
  if (handle_) cublasDestroy(handle_);
  if (workspace_) cudaFree(workspace_);
  if (norm_ring_) cudaFree(norm_ring_);
}

void Gemm::run(const __nv_bfloat16* x, const __nv_bfloat16* W, void* y, cudaDataType y_type,
               int64_t n_rows, int64_t in, int64_t out) {
  HOGWILD_CHECK(n_rows >= 0 && in > 0 && out > 0);
  if (n_rows == 0) return;
  // Column-major view: Y^T (out, n_rows) = W^T^T ... i.e. C = op(A) B with A = W stored (in, out)
  // column-major (= W row-major), op = T; B = x^T stored (in, n_rows) column-major.
  const float alpha = 1.0f, beta = 0.0f;
  HOGWILD_CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(out),
                                    static_cast<int>(n_rows), static_cast<int>(in), &alpha, W,
                                    CUDA_R_16BF, static_cast<int>(in), x, CUDA_R_16BF,
                                    static_cast<int>(in), &beta, y, y_type, static_cast<int>(out),
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

bool Gemm::use_skinny(int64_t n_rows, int64_t in) const {
  return skinny_ && skinny_supported(n_rows, in);
}

void Gemm::linear(const __nv_bfloat16* x, const __nv_bfloat16* W, __nv_bfloat16* y, int64_t n_rows,
                  int64_t in, int64_t out, const __nv_bfloat16* bias) {
  if (use_skinny(n_rows, in))
    return skinny_linear(x, W, bias, y, nullptr, n_rows, in, out, stream_);
  run(x, W, y, CUDA_R_16BF, n_rows, in, out);
  if (bias) add_bias(y, bias, n_rows, out, stream_);
}

void Gemm::linear_f32(const __nv_bfloat16* x, const __nv_bfloat16* W, float* y, int64_t n_rows,
                      int64_t in, int64_t out) {
  if (use_skinny(n_rows, in))
    return skinny_linear(x, W, nullptr, nullptr, y, n_rows, in, out, stream_);
  run(x, W, y, CUDA_R_32F, n_rows, in, out);
}

void Gemm::linear_swiglu(const __nv_bfloat16* x, const __nv_bfloat16* W, __nv_bfloat16* gate_up,
                         __nv_bfloat16* act, int64_t n_rows, int64_t in, int64_t intermediate) {
  if (use_skinny(n_rows, in)) return skinny_swiglu(x, W, act, n_rows, in, intermediate, stream_);
  run(x, W, gate_up, CUDA_R_16BF, n_rows, in, 2 * intermediate);
  swiglu(gate_up, act, n_rows, intermediate, stream_);
}

}  // namespace hogwild::cuda
