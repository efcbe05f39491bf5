// Mixture-of-experts MLP for the CUDA backend (docs/CUDA.md "Mixture of experts"): Qwen3-MoE's
// sparse block (transformers models/qwen3_moe/modeling_qwen3_moe.py, Qwen3MoeSparseMoeBlock).
// Per layer, for the forward's T token rows:
//   1. router logits (T, E) fp32 = h W_router^T (gemm.h, outside this file);
//   2. moe_route: per row softmax in fp32, the top k experts (ties: the lower expert index
//      first), renormalised to sum 1 when norm_topk_prob; then the row/choice pairs
//      ("assignments") are grouped by expert, and the experts that any row chose are listed;
//   3. moe_expert_swiglu / moe_expert_down: one CTA column per chosen expert, so each chosen
//      expert's weights are read ONCE per forward for all rows routed to it (the workers of one
//      hogwild problem read the same cache and often pick the same experts);
//   4. moe_combine: per row the routing-weighted sum of its k expert outputs in fp32, in order of
//      ascending expert index, rounded once to bf16.
// Every launch has a grid fixed by T (never by the routing, which lives on the device), so a
// decode forward is captured in a CUDA graph like the dense layers. A row's result depends only on
// its own inputs (the tensor-core tile computes each row's dot products independently): batch
// invariant. CPU twin: the sparse MLP of src/cpu (cpu_backend.cpp).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/skinny_gemm.h"

namespace hogwild::cuda {

struct QuantWeight;  // quant_gemm.h

/// Largest expert count and top-k moe_route supports (Qwen3-MoE: 128 and 8).
inline constexpr int kMoeMaxExperts = 512;
inline constexpr int kMoeMaxTopK = 32;

/// The device buffers of one routing, for at most max_rows token rows (moe_route_alloc).
struct MoeRoute {
  int32_t* expert = nullptr;    // (T, k) chosen experts of each row, ascending
  float* weight = nullptr;      // (T, k) their routing weights
  int32_t* assign = nullptr;    // (T, k) position of (row, choice) in `rows`
  int32_t* rows = nullptr;      // (T k) token row of each assignment, grouped by expert
  int32_t* active = nullptr;    // (E) the chosen experts, ascending; then unused
  int32_t* counts = nullptr;    // (E) assignments of active[i]  (indexed like active)
  int32_t* offsets = nullptr;   // (E) first position in `rows` of active[i]'s assignments
  int32_t* n_active = nullptr;  // (1) number of chosen experts
};

/// Device bytes of a MoeRoute for max_rows rows, E experts, top-k k (one allocation).
int64_t moe_route_bytes(int64_t max_rows, int64_t E, int64_t k);
/// Carves a MoeRoute out of `mem` (moe_route_bytes(max_rows, E, k) bytes, 16-byte aligned).
MoeRoute moe_route_view(void* mem, int64_t max_rows, int64_t E, int64_t k);

/// Experts per layer that T rows can choose: min(E, T k) (the launchers' grid bound).
int64_t moe_max_active(int64_t T, int64_t E, int64_t k);

/// Routing of T rows: logits (T, E) fp32 -> r (every field). One CTA.
/// PRECONDITION: 1 <= k <= min(E, kMoeMaxTopK), E <= kMoeMaxExperts, T >= 1.
void moe_route(const float* logits, int64_t T, int64_t E, int64_t k, bool norm_topk_prob,
               const MoeRoute& r, cudaStream_t stream);

/// act (T k, I) bf16, row p = silu(x[rows[p]] Wg_e^T) * (x[rows[p]] Wu_e^T) for the expert e of
/// assignment p; W_gate_up (E, 2 I, H) bf16 = per expert [gate_proj; up_proj] (I rows each);
/// x (T, H) bf16. fp32 accumulation, one rounding. With norm.ss set, x is the fused RMSNorm's
/// x_res * w (skinny_gemm.h SkinnyNormIn) and both products of row t are scaled by its 1 / RMS.
/// PRECONDITION: H % 8 == 0, 16-byte aligned.
void moe_expert_swiglu(const __nv_bfloat16* x, const __nv_bfloat16* W_gate_up, const MoeRoute& r,
                       __nv_bfloat16* act, int64_t T, int64_t H, int64_t I, int64_t E, int64_t k,
                       cudaStream_t stream, const SkinnyNormIn& norm = {});

/// y (T k, H) fp32, row p = act[p] W_down_e^T for the expert e of assignment p; W_down (E, H, I)
/// bf16; act (T k, I) bf16. PRECONDITION: I % 8 == 0, 16-byte aligned.
void moe_expert_down(const __nv_bfloat16* act, const __nv_bfloat16* W_down, const MoeRoute& r,
                     float* y, int64_t T, int64_t H, int64_t I, int64_t E, int64_t k,
                     cudaStream_t stream);

/// The same two products over quantized experts (quant_gemm.h): W_gate_up a QuantWeight of
/// (E 2 I, H) rows (expert e's gate rows then up rows at e 2 I), W_down of (E H, I) rows; int4
/// (group sizes that are multiples of 32) or fp8, without act-order. Dequantized in registers; each
/// chosen expert's packed words are read once per forward. PRECONDITION: as above.
void moe_expert_swiglu(const __nv_bfloat16* x, const QuantWeight& W_gate_up, const MoeRoute& r,
                       __nv_bfloat16* act, int64_t T, int64_t H, int64_t I, int64_t E, int64_t k,
                       cudaStream_t stream, const SkinnyNormIn& norm = {});
void moe_expert_down(const __nv_bfloat16* act, const QuantWeight& W_down, const MoeRoute& r,
                     float* y, int64_t T, int64_t H, int64_t I, int64_t E, int64_t k,
                     cudaStream_t stream);

/// The combine as the producer of the fused RMSNorm (skinny_gemm.h SkinnyResidualOut), in place
/// of moe_combine and the residual add + norm after it: per row t, s = bf16(the combine's sum);
/// res.x[t] += s (fp32, (T, H)); xw (T, H) bf16 = bf16(res.x[t] * res.w_norm); res.ss[t] += sum of
/// res.x[t]^2; res.ss_zero[t] = 0.
void moe_combine_residual(const float* y, const MoeRoute& r, int64_t T, int64_t H, int64_t k,
                          const SkinnyResidualOut& res, __nv_bfloat16* xw, cudaStream_t stream);

/// out (T, H) bf16 = bf16(sum over j of weight[t][j] * y[assign[t][j]]), j ascending.
void moe_combine(const float* y, const MoeRoute& r, __nv_bfloat16* out, int64_t T, int64_t H,
                 int64_t k, cudaStream_t stream);

}  // namespace hogwild::cuda
