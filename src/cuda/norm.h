// RMSNorm (LlamaRMSNorm / Qwen3RMSNorm): y = x * rsqrt(mean(x^2) + eps) * w, fp32 math.
// CPU twin: hogwild::cpu::rmsnorm (src/cpu/ops.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hogwild::cuda {

/// Residual-stream norm: x (n_rows, dim) fp32, w (dim) bf16 -> y (n_rows, dim) bf16.
void rmsnorm(const float* x, const __nv_bfloat16* w, __nv_bfloat16* y, int64_t n_rows, int64_t dim,
             float eps, cudaStream_t stream);

/// Fused residual add + norm: x += y (x fp32 (n_rows, dim), y bf16), then out = rmsnorm(x) * w
/// (bf16). One pass instead of two launches between the projections of a layer.
void add_rmsnorm(float* x, const __nv_bfloat16* y, const __nv_bfloat16* w, __nv_bfloat16* out,
                 int64_t n_rows, int64_t dim, float eps, cudaStream_t stream);

/// q and k norm in one launch: per token, heads [0, n_q) use w_q, heads [n_q, n_q + n_k) use w_k
/// (the q and k columns of the fused qkv row are adjacent). Same layout rules as rmsnorm_heads.
void rmsnorm_qk_heads(__nv_bfloat16* x, int64_t token_stride, int64_t n_tokens, int64_t n_q,
                      int64_t n_k, const __nv_bfloat16* w_q, const __nv_bfloat16* w_k, int64_t dim,
                      float eps, cudaStream_t stream);

/// Per-head q/k norm (Qwen3 qk_norm) in place: token t's head h is the vector
/// x[t * token_stride + h * dim .. + dim) (bf16), for t < n_tokens, h < n_heads; w (dim) bf16.
/// (token_stride lets it run on the q or k columns of the fused qkv projection output.)
/// PRECONDITION: dim <= 1024, token_stride >= n_heads * dim.
void rmsnorm_heads(__nv_bfloat16* x, int64_t token_stride, int64_t n_tokens, int64_t n_heads,
                   const __nv_bfloat16* w, int64_t dim, float eps, cudaStream_t stream);

}  // namespace hogwild::cuda
