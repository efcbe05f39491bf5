// Small element-wise ops of the CUDA forward: embedding, residual add, bias add, SwiGLU, row
// gather, dtype conversion, on-GPU random fill. All launchers are asynchronous on `stream`, check
// their preconditions with HOGWILD_CHECK and the launch with cudaGetLastError (cuda_check.h).
// CPU twins: src/cpu/ops.h (embedding, add_inplace, swiglu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hogwild::cuda {

using bf16 = __nv_bfloat16;

/// out (n_tokens, hidden_size) fp32 = table rows ids[0..n_tokens). table (vocab_size, hidden_size)
/// bf16. Ids out of [0, vocab_size) produce zero rows (the backend validates ids beforehand).
void embedding(const bf16* table, const int32_t* ids, int64_t n_tokens, int64_t hidden_size,
               int64_t vocab_size, float* out, cudaStream_t stream);

/// x[i] += y[i] for n elements: x fp32 (the residual stream), y bf16.
void add_residual(float* x, const bf16* y, int64_t n, cudaStream_t stream);

/// y (n_rows, n_cols) bf16 += bias (n_cols) bf16, in fp32 then rounded.
void add_bias(bf16* y, const bf16* bias, int64_t n_rows, int64_t n_cols, cudaStream_t stream);

/// out (n_rows, n) = silu(gate) * up where gate_up (n_rows, 2n) holds [gate | up] per row (the
/// fused gate/up projection). fp32 math, bf16 result.
void swiglu(const bf16* gate_up, bf16* out, int64_t n_rows, int64_t n, cudaStream_t stream);

/// out (n_rows, n_cols) = x rows rows[0..n_rows) (fp32). PRECONDITION: rows valid.
void gather_rows(const float* x, const int32_t* rows, int64_t n_rows, int64_t n_cols, float* out,
                 cudaStream_t stream);

/// Conversions, n elements.
void f32_to_bf16(const float* x, bf16* y, int64_t n, cudaStream_t stream);
void bf16_to_f32(const bf16* x, float* y, int64_t n, cudaStream_t stream);

/// Fills x (n) with center + uniform[-scale, scale) from a counter hash of (seed, index):
/// deterministic, no host memory (random-weight models for `hogwild bench`).
void fill_uniform_bf16(bf16* x, int64_t n, uint64_t seed, float scale, float center,
                       cudaStream_t stream);

}  // namespace hogwild::cuda
