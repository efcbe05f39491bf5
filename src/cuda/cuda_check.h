// Device-error channel of the CUDA backend (docs/STYLE.md habit 6): a failing CUDA or cuBLAS call
// means broken device state (or a bug), not bad user input, so it aborts with file:line, the call
// and the error's name. User-facing problems (no GPU, cache full) throw hogwild::Error instead.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace hogwild::cuda {

[[noreturn]] inline void cuda_abort(const char* file, int line, const char* expr, cudaError_t e) {
  std::fprintf(stderr, "%s:%d: CUDA error %s (%s) in %s\n", file, line, cudaGetErrorName(e),
               cudaGetErrorString(e), expr);
  std::abort();
}

[[noreturn]] inline void cublas_abort(const char* file, int line, const char* expr,
                                      cublasStatus_t s) {
  std::fprintf(stderr, "%s:%d: cuBLAS error %s in %s\n", file, line, cublasGetStatusName(s), expr);
  std::abort();
}

}  // namespace hogwild::cuda

/// Launcher precondition (a caller bug, not user input): aborts with file:line and the expression.
/// (core/error.h's HOGWILD_CHECK pulls in fmt, which nvcc cannot compile in C++20 mode.)
#define HOGWILD_CUDA_REQUIRE(cond)                                                         \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "%s:%d: precondition failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

/// Checks a cudaError_t; aborts with file:line and the CUDA error name.
#define HOGWILD_CUDA_CHECK(expr)                                                       \
  do {                                                                                 \
    cudaError_t _e = (expr);                                                           \
    if (_e != cudaSuccess) ::hogwild::cuda::cuda_abort(__FILE__, __LINE__, #expr, _e); \
  } while (0)

/// After a kernel launch: launch-configuration errors surface here.
#define HOGWILD_CUDA_CHECK_LAUNCH() HOGWILD_CUDA_CHECK(cudaGetLastError())

#define HOGWILD_CUBLAS_CHECK(expr)                                                                 \
  do {                                                                                             \
    cublasStatus_t _s = (expr);                                                                    \
    if (_s != CUBLAS_STATUS_SUCCESS) ::hogwild::cuda::cublas_abort(__FILE__, __LINE__, #expr, _s); \
  } while (0)
