// THE table of Hugging Face tensor names (docs/STYLE.md habit 3): for a ModelConfig, every tensor a
// checkpoint of that architecture holds, with its expected shape. The loader (weights.cpp), the
// checkpoint check behind `hogwild info`, and make-model all walk this one list.
// Source: transformers/models/{qwen2,qwen3,qwen3_moe,llama,mistral,phi3}/modeling_*.py (module
// names); for Qwen3-MoE also transformers 5.x conversion_mapping.py ("qwen3_moe" = "qwen2_moe":
// the published per-expert tensors are merged into the fused experts.gate_up_proj / down_proj).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace hogwild {

/// What a tensor is. Phi3 stores q/k/v as one `qkv_proj` (rows q, then k, then v) and gate/up as
/// one `gate_up_proj` (rows gate, then up); the loader splits them.
enum class TensorKind {
  embed_tokens,
  norm,
  lm_head,  // global
  input_layernorm,
  post_attention_layernorm,  // per layer
  q_proj,
  k_proj,
  v_proj,
  o_proj,
  q_bias,
  k_bias,
  v_bias,
  q_norm,
  k_norm,
  qkv_proj,
  gate_proj,
  up_proj,
  gate_up_proj,
  down_proj,
  // Mixture of experts (Qwen3MoeSparseMoeBlock), in a layer where ModelConfig::is_moe_layer:
  router,                // mlp.gate.weight [num_experts, hidden_size] (router logits = x W^T)
  expert_gate_proj,      // mlp.experts.N.gate_proj.weight [moe_intermediate_size, hidden_size]
  expert_up_proj,        // mlp.experts.N.up_proj.weight [moe_intermediate_size, hidden_size]
  expert_down_proj,      // mlp.experts.N.down_proj.weight [hidden_size, moe_intermediate_size]
  experts_gate_up_proj,  // fused (transformers 5.x): mlp.experts.gate_up_proj [E, 2*moe_inter, H]
                         //   (per expert: the gate rows, then the up rows)
  experts_down_proj,     // fused (transformers 5.x): mlp.experts.down_proj [E, H, moe_inter]
};

/// How a checkpoint stores the experts of a MoE layer. per_expert: the published Qwen3-MoE form
/// (mlp.experts.N.{gate,up,down}_proj.weight, N = 0..num_experts-1), which transformers 5.x merges
/// at load (conversion_mapping.py: MergeModulelist(dim=0) then Concatenate(dim=1) for gate/up);
/// fused: that merged form as transformers 5.x modules hold it (mlp.experts.gate_up_proj,
/// mlp.experts.down_proj, no ".weight"), which it also loads as is.
enum class ExpertLayout { per_expert, fused };

/// Broad class of a tensor, for initialisation (make-model) and reporting.
enum class TensorRole { matrix, norm, bias };

struct TensorSpec {
  std::string name;  // e.g. "model.layers.3.self_attn.q_proj.weight"
  TensorKind kind;
  TensorRole role;
  int64_t layer = -1;          // -1 for embed_tokens, norm, lm_head
  int64_t expert = -1;         // N for expert_{gate,up,down}_proj, else -1
  std::vector<int64_t> shape;  // [out_features, in_features] for matrices, [n] for norms/biases;
                               // [num_experts, out, in] for the fused experts tensors
};

/// Every tensor of a model with config c, in checkpoint order (embed_tokens, layer 0..L-1, norm,
/// lm_head). lm_head is absent when c.tie_word_embeddings. A layer where c.is_moe_layer holds has,
/// in place of mlp.{gate,up,down}_proj, the router mlp.gate.weight and its experts stored as
/// `experts` says (per expert: for N = 0..E-1 gate_proj, up_proj, down_proj).
std::vector<TensorSpec> model_tensor_specs(const ModelConfig& c,
                                           ExpertLayout experts = ExpertLayout::per_expert);

/// Whether k is one of the experts' tensors (expert_* or experts_*), not the router.
bool is_expert_tensor(TensorKind k);

/// "[a, b]"
std::string shape_str(const std::vector<int64_t>& shape);

/// Tensors some checkpoints carry that hogwild ignores (e.g. "...rotary_emb.inv_freq" buffers
/// saved by old transformers versions, or lm_head.weight next to tie_word_embeddings=true).
bool is_ignorable_tensor(const ModelConfig& c, const std::string& name);

}  // namespace hogwild
