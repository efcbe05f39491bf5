// THE table of Hugging Face tensor names (docs/STYLE.md habit 3): for a ModelConfig, every tensor a
// checkpoint of that architecture holds, with its expected shape. The loader (weights.cpp), the
// checkpoint check behind `hogwild info`, and make-model all walk this one list.
// Source: transformers/models/{qwen2,qwen3,llama,mistral,phi3}/modeling_*.py (module names).
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
};

/// Broad class of a tensor, for initialisation (make-model) and reporting.
enum class TensorRole { matrix, norm, bias };

struct TensorSpec {
  std::string name;  // e.g. "model.layers.3.self_attn.q_proj.weight"
  TensorKind kind;
  TensorRole role;
  int64_t layer = -1;          // -1 for embed_tokens, norm, lm_head
  std::vector<int64_t> shape;  // [out_features, in_features] for matrices, [n] for norms/biases
};

/// Every tensor of a model with config c, in checkpoint order (embed_tokens, layer 0..L-1, norm,
/// lm_head). lm_head is absent when c.tie_word_embeddings.
std::vector<TensorSpec> model_tensor_specs(const ModelConfig& c);

/// "[a, b]"
std::string shape_str(const std::vector<int64_t>& shape);

/// Tensors some checkpoints carry that hogwild ignores (e.g. "...rotary_emb.inv_freq" buffers
/// saved by old transformers versions, or lm_head.weight next to tie_word_embeddings=true).
bool is_ignorable_tensor(const ModelConfig& c, const std::string& name);

}  // namespace hogwild
