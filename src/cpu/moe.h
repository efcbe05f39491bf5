// The sparse MoE block of Qwen3-MoE on the CPU (fp32), grouped by expert: every row is routed
// (cpu::moe_route), then each expert that some row chose runs ONCE, as one projection over all of
// its rows, and each row sums its experts' outputs times its routing weights.
// Source: transformers models/qwen3_moe/modeling_qwen3_moe.py (Qwen3MoeSparseMoeBlock,
// Qwen3MoeExperts: final = zeros; for each hit expert in increasing index, final.index_add_(rows,
// expert(x[rows]) * weight)); the order of that sum is kept here.
#pragma once

#include <cstdint>
#include <vector>

#include "model/weights.h"

namespace hogwild::cpu {

/// Which rows each expert serves after routing, in increasing expert index; within an expert the
/// rows in increasing order (a row occurs at most once per expert).
struct ExpertGroups {
  std::vector<int32_t> expert;  // the touched experts, increasing
  std::vector<int64_t> begin;   // rows of expert[i]: row[begin[i] .. begin[i + 1])
  std::vector<int64_t> row;     // row indices, grouped
  std::vector<float> weight;    // the routing weight of (row, that expert)
};

/// What moe_mlp decided for its rows (tests compare it with another backend's routing).
struct MoeTrace {
  ExpertGroups groups;
  std::vector<int32_t> chosen;       // (n_rows, top_k) as cpu::moe_route writes them
  std::vector<float> router_logits;  // (n_rows, num_experts) fp32
};

/// Groups the routing of n_rows rows (experts, weights: (n_rows, top_k) as cpu::moe_route writes
/// them) by expert. Throws hogwild::Error when an expert index is outside [0, n_experts) or a row
/// names one expert twice.
ExpertGroups group_by_expert(const int32_t* experts, const float* weights, int64_t n_rows,
                             int64_t top_k, int64_t n_experts);

/// out (n_rows, hidden_size) = the MoE block of layer L applied to x (n_rows, hidden_size), both
/// fp32 row-major, not aliasing: router logits x W_gate^T, moe_route (num_experts_per_tok,
/// norm_topk_prob), then per touched expert e over its rows R: y = down(silu(gate x_R) * up x_R)
/// (moe_intermediate_size inner) and out[r] += y[r] * weight(r, e) for the experts in increasing
/// index, out starting at 0. A row's bits do not depend on the other rows while each expert serves
/// at most kSkinnyMaxRows rows (cpu/ops.h). L must hold the router and the experts of c (the
/// backend checks their sizes). trace (optional): receives the routing. forced (optional,
/// (n_rows, top_k) expert indices): each row runs these experts instead of its own top-k, weighted
/// by their router probabilities (renormalised when norm_topk_prob) — a test hook that replays
/// another backend's routing; trace->chosen still holds the rows' own top-k. Throws
/// hogwild::Error when a forced index is outside [0, num_experts) or repeats within a row.
void moe_mlp(const ModelConfig& c, const LayerWeights& L, const float* x, int64_t n_rows,
             float* out, MoeTrace* trace = nullptr, const int32_t* forced = nullptr);

}  // namespace hogwild::cpu
