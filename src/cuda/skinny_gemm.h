// Linear layers for decode-sized batches (1..8 rows): y = x W^T (+ bias) reading W (out_features,
// in_features) bf16 row-major once with 16-byte streaming loads, x (n_rows, in_features) bf16 from
// L1/L2, on the tensor cores (mma.sync m16n8k16, W as the 16-row side, the token rows as the 8-wide
// side, fp32 accumulation). At 1..8 rows a projection is a pure stream over W; cuBLAS picks tilings
// meant for larger batches, this kernel stays at the memory roofline (docs/PERFLOG.md 8b9696c).
// Launched with programmatic dependent launch (pdl.cuh): a CTA starts loading its weights before
// the previous kernel has finished. Larger batches go to cuBLAS (gemm.h).
// CPU twins: hogwild::cpu::matmul, hogwild::cpu::swiglu (src/cpu/ops.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hogwild::cuda {

struct QuantWeight;  // quant_gemm.h

inline constexpr int kSkinnyMaxRows = 8;

/// RMSNorm fused across two skinny launches (saves the norm kernel between projections). The
/// producer (skinny_residual) adds its product to the fp32 residual stream, writes
/// xw = bf16(x_new * w_norm) and adds each row's sum of squares of x_new to ss; the consumer
/// (skinny_linear / skinny_swiglu with a SkinnyNormIn) multiplies its products over xw by
/// rsqrt(ss / dim + eps). Equal to rmsnorm-then-project up to where the bf16 rounding falls (here
/// before the 1 / RMS factor, in hogwild::cpu::rmsnorm after it).
struct SkinnyNormIn {
  const float* ss = nullptr;  // (n_rows) sums of squares of the residual rows; null: no norm
  int64_t dim = 0;            // hidden_size (= in_features of the consumer)
  float eps = 0.0f;           // rms_norm_eps
};
struct SkinnyResidualOut {
  float* x = nullptr;                     // (n_rows, out) fp32 residual stream, += bf16(product)
  const __nv_bfloat16* w_norm = nullptr;  // (out) weight of the norm that follows
  float* ss = nullptr;       // (n_rows) += sum of squares of the new x; must be 0 before
  float* ss_zero = nullptr;  // (n_rows) set to 0 (for the next producer); != ss
};

/// Split-K (a projection whose tiles cannot fill the GPU once is cut along K) merges the splits'
/// sums inside a thread-block cluster through distributed shared memory (compute capability >=
/// 9.0; on by default) instead of through global memory and a per-tile counter. Both add the
/// splits in split order, so the outputs are the same bits. Off: for A/B and tests.
void set_skinny_cluster_split(bool on);
bool skinny_cluster_split();

/// True when the skinny kernels support the shape: 1 <= n_rows <= 8, in_features % 8 == 0,
/// in_features and out_features < 2^31.
bool skinny_supported(int64_t n_rows, int64_t in);

/// y (n_rows, out) = x W^T + bias; y bf16 (y_f32 == nullptr) or fp32 (y == nullptr); bias (out)
/// bf16 or nullptr (added in fp32 before the one rounding).
/// PRECONDITION: skinny_supported(n_rows, in); x, W 16-byte aligned.
void skinny_linear(const __nv_bfloat16* x, const __nv_bfloat16* W, const __nv_bfloat16* bias,
                   __nv_bfloat16* y, float* y_f32, int64_t n_rows, int64_t in, int64_t out,
                   cudaStream_t stream, const SkinnyNormIn& norm = {});

/// The fused gate/up projection with SwiGLU: W (2 I, in) = [W_gate; W_up] bf16,
/// act (n_rows, I) bf16 = silu(x W_gate^T) * (x W_up^T), computed from the fp32 products (one
/// rounding). PRECONDITION: as skinny_linear.
void skinny_swiglu(const __nv_bfloat16* x, const __nv_bfloat16* W, __nv_bfloat16* act,
                   int64_t n_rows, int64_t in, int64_t intermediate, cudaStream_t stream,
                   const SkinnyNormIn& norm = {});

/// The producer side of the fused norm (SkinnyNormIn): y = x W^T (fp32), then per element
/// res.x += bf16(y); xw (n_rows, out) bf16 = bf16(res.x * res.w_norm); res.ss[t] += sum of
/// res.x[t]^2 (atomics); res.ss_zero[0 .. n_rows) = 0. PRECONDITION: as skinny_linear.
void skinny_residual(const __nv_bfloat16* x, const __nv_bfloat16* W, int64_t n_rows, int64_t in,
                     int64_t out, const SkinnyResidualOut& res, __nv_bfloat16* xw,
                     cudaStream_t stream);

/// The same three products over a quantized W (quant_gemm.h QuantWeight: int4 with group sizes
/// that are multiples of 32, or fp8 with 128 x 128 blocks), dequantized in registers, with the
/// same epilogues, split-K and programmatic launch; W.out and W.in are out and in_features. A W
/// with an act-order permutation (GPTQ desc_act) first gathers x by it into scratch
/// (quant_scratch_bytes(W, n_rows) bytes). The products equal quant_linear's up to the order of the
/// fp32 sums. PRECONDITION: skinny_supported(n_rows, W.in); x 16-byte aligned.
void skinny_quant_linear(const __nv_bfloat16* x, const QuantWeight& W, const __nv_bfloat16* bias,
                         __nv_bfloat16* y, int64_t n_rows, void* scratch, cudaStream_t stream,
                         const SkinnyNormIn& norm = {});
/// W = [W_gate; W_up] (2 I, in) quantized; act as skinny_swiglu.
void skinny_quant_swiglu(const __nv_bfloat16* x, const QuantWeight& W, __nv_bfloat16* act,
                         int64_t n_rows, void* scratch, cudaStream_t stream,
                         const SkinnyNormIn& norm = {});
/// As skinny_residual over a quantized W.
void skinny_quant_residual(const __nv_bfloat16* x, const QuantWeight& W, int64_t n_rows,
                           const SkinnyResidualOut& res, __nv_bfloat16* xw, void* scratch,
                           cudaStream_t stream);

}  // namespace hogwild::cuda
