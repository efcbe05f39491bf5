// Linear layers for decode-sized batches (1..8 rows): y = x W^T reading W (out_features,
// in_features) bf16 row-major once with 16-byte loads, x (n_rows, in_features) bf16 from L1/L2,
// fp32 accumulation. cuBLAS picks GEMM tilings meant for larger batches; at 1..8 rows the op is a
// pure stream over W, and this kernel keeps that stream at the memory roofline (docs/CUDA.md has
// the measurements). Larger batches go to cuBLAS (gemm.h).
// CPU twin: hogwild::cpu::matmul (src/cpu/ops.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hogwild::cuda {

inline constexpr int kSkinnyMaxRows = 8;

/// True when skinny_linear supports the shape: 1 <= n_rows <= 8, in_features % 8 == 0.
bool skinny_supported(int64_t n_rows, int64_t in);

/// y (n_rows, out) = x W^T; y bf16 (y_f32 == nullptr) or fp32 (y == nullptr).
/// PRECONDITION: skinny_supported(n_rows, in); x and W 16-byte aligned.
void skinny_linear(const __nv_bfloat16* x, const __nv_bfloat16* W, __nv_bfloat16* y, float* y_f32,
                   int64_t n_rows, int64_t in, int64_t out, cudaStream_t stream);

}  // namespace hogwild::cuda
