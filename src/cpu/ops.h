// Plain fp32 ops of the CPU reference backend. They are also the CPU twins the CUDA ops are tested
// against (docs/STYLE.md habit 4), so they take raw pointers and explicit sizes, row-major.
// Sources: transformers/models/llama/modeling_llama.py (LlamaRMSNorm, LlamaMLP, eager attention),
// flash-decoding / FlashInfer for the partial attention state.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "cpu/skinny.h"

namespace hogwild::cpu {

/// RMSNorm as HF computes it: y = x * rsqrt(mean(x^2) + eps) * w, in fp32.
/// x, y: (n_rows, dim), may alias. w: (dim).
void rmsnorm(const float* x, const float* w, float* y, int64_t n_rows, int64_t dim, float eps);

/// y = x W^T (+ bias): x (n_rows, in), W (out, in) row-major as HF stores nn.Linear weights,
/// y (n_rows, out), bias (out) or nullptr. Up to kSkinnyMaxRows rows (decode of up to 64 workers):
/// cpu/skinny.h, whose row results are bitwise independent of n_rows and of the other rows; more
/// rows (prefill chunks): OpenBLAS cblas_sgemm (multithreaded by OpenBLAS), whose bits differ.
constexpr int64_t kSkinnyMaxRows = 64;
void matmul(const float* x, const float* W, const float* bias, float* y, int64_t n_rows, int64_t in,
            int64_t out);
/// Several projections of one input x (n_rows, in) (q/k/v, gate/up): the same results as one
/// matmul per projection; up to kSkinnyMaxRows rows they share one pass over the thread pool.
void matmul_shared(const float* x, int64_t n_rows, int64_t in,
                   std::initializer_list<SkinnyProjection> projections);

/// SwiGLU of the Llama MLP: out[i] = silu(gate[i]) * up[i], n elements; out may alias gate or up.
/// silu(x) = x * sigmoid(x); vectorised (cpu::silu_mul, cpu/skinny.h).
void swiglu(const float* gate, const float* up, float* out, int64_t n);

/// Mixture-of-experts routing of Qwen3MoeSparseMoeBlock (transformers
/// models/qwen3_moe/modeling_qwen3_moe.py: the router / Qwen3MoeTopKRouter): per row, the softmax
/// of its router logits in fp32, the top_k largest probabilities (descending; a tie goes to the
/// lower expert index, torch.topk's stable order — torch leaves the order of ties unspecified),
/// then, when norm_topk_prob, each divided by the sum of the k (summed in that order).
/// router_logits (n_rows, n_experts); experts, weights (n_rows, top_k). Rows are independent.
/// A row with a non-finite logit (NaN/inf activations) gets experts 0..top_k-1 with NaN weights,
/// so its output is NaN as a dense MLP's would be. Throws hogwild::Error unless
/// 1 <= top_k <= n_experts.
void moe_route(const float* router_logits, int64_t n_rows, int64_t n_experts, int64_t top_k,
               bool norm_topk_prob, int32_t* experts, float* weights);

/// Embedding lookup: out (n, hidden_size) = table rows ids[0..n). table (vocab_size, hidden_size).
/// PRECONDITION: 0 <= ids[i] < vocab_size (the backend validates ids before calling).
void embedding(const float* table, const int32_t* ids, int64_t n, int64_t hidden_size, float* out);

/// out[i] += x[i], n elements.
void add_inplace(float* out, const float* x, int64_t n);

/// Attention partial state of one query head over a set of keys (flash-decoding):
///   m = max_j s_j (natural-log domain scores s_j = q.k_j * scale),
///   d = sum_j exp(s_j - m),
///   o = sum_j exp(s_j - m) * v_j   (un-normalised, head_dim values).
/// The empty set is m = -inf, d = 0, o = 0; merging it into any state leaves that state unchanged
/// (its weight exp(-inf - m) is 0). Merge uses natural exp (log base e). The final output is o / d.
struct AttnState {
  float m;   // running max score (natural-log domain); -inf when empty
  float d;   // sum of exp(s - m)
  float* o;  // (head_dim) un-normalised output; owned by the caller
};

/// Sets s to the empty state: m = -inf, d = 0, o[0..head_dim) = 0.
void attn_state_init(AttnState& s, int64_t head_dim);
/// Merges partial state b into a (log-sum-exp rescaling). Either may be empty.
void attn_state_merge(AttnState& a, const AttnState& b, int64_t head_dim);
/// Writes o / d to out (head_dim). PRECONDITION: d > 0 (at least one key seen).
void attn_state_normalize(const AttnState& s, float* out, int64_t head_dim);

/// Partial attention of one query head q (head_dim) over n_keys keys/values laid out with a row
/// stride: key j is k[j * stride .. + head_dim), value j is v[j * stride ..]. scale =
/// 1/sqrt(head_dim) usually. Accumulates into s (which may already hold other keys: online
/// softmax), keys taken in chunks of 64: the chunk's scores q.k_j * scale (cpu/skinny.h
/// skinny_dots: a fixed order of reduction), its max, one rescale of s, then exp(score - max) and
/// the values in key order. The result depends only on q, the keys, the values and s: never on
/// other heads or rows.
void attn_partial(const float* q, const float* k, const float* v, int64_t n_keys, int64_t stride,
                  int64_t head_dim, float scale, AttnState& s);
/// The same for n_q query heads that share one key/value head (a GQA group): q (n_q, head_dim),
/// s[0..n_q); each head's result is bit for bit what attn_partial gives it alone.
void attn_partial(const float* q, int64_t n_q, const float* k, const float* v, int64_t n_keys,
                  int64_t stride, int64_t head_dim, float scale, AttnState* s);

}  // namespace hogwild::cpu
