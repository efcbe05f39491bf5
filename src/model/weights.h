// Model weights in fp32 on the host, one field per HF tensor (the HF names live in one table in
// tensor_names.cpp). Matrices are row-major [out_features, in_features] exactly as stored by HF
// (y = x W^T). Fused Phi3 tensors (qkv_proj, gate_up_proj) are split at load into q/k/v and
// gate/up. Quantized checkpoints (model/quant.h) are dequantized to fp32 at load.
#pragma once

#include <string>
#include <vector>

#include "model/config.h"
#include "model/tensor_names.h"

namespace hogwild {

/// One expert of a MoE layer: a SwiGLU MLP of moe_intermediate_size (Qwen3MoeMLP).
struct ExpertWeights {
  std::vector<float> gate_proj;  // (moe_intermediate_size, hidden_size)
  std::vector<float> up_proj;    // (moe_intermediate_size, hidden_size)
  std::vector<float> down_proj;  // (hidden_size, moe_intermediate_size)
};

struct LayerWeights {
  std::vector<float> input_layernorm;           // (hidden_size)
  std::vector<float> q_proj;                    // (num_attention_heads*head_dim, hidden_size)
  std::vector<float> k_proj;                    // (num_key_value_heads*head_dim, hidden_size)
  std::vector<float> v_proj;                    // (num_key_value_heads*head_dim, hidden_size)
  std::vector<float> q_bias, k_bias, v_bias;    // (out) when attention_bias, else empty
  std::vector<float> q_norm, k_norm;            // (head_dim) when qk_norm, else empty
  std::vector<float> o_proj;                    // (hidden_size, num_attention_heads*head_dim)
  std::vector<float> post_attention_layernorm;  // (hidden_size)
  // Dense MLP; empty in a MoE layer (ModelConfig::is_moe_layer).
  std::vector<float> gate_proj;  // (intermediate_size, hidden_size)
  std::vector<float> up_proj;    // (intermediate_size, hidden_size)
  std::vector<float> down_proj;  // (hidden_size, intermediate_size)
  // MoE layer only (else empty): the router mlp.gate and the experts.
  std::vector<float> router;           // (num_experts, hidden_size)
  std::vector<ExpertWeights> experts;  // (num_experts)
};

struct ModelWeights {
  ModelConfig config;
  std::vector<float> embed_tokens;   // (vocab_size, hidden_size)
  std::vector<LayerWeights> layers;  // (num_hidden_layers)
  std::vector<float> norm;           // (hidden_size) final RMSNorm
  std::vector<float> lm_head;        // (vocab_size, hidden_size); empty when tie_word_embeddings
  /// The output projection: lm_head, or embed_tokens when tied.
  const std::vector<float>& output_weight() const {
    return lm_head.empty() ? embed_tokens : lm_head;
  }
};

/// One field of ModelWeights that a checkpoint tensor fills, and how many of its elements go there.
struct TensorDestination {
  std::vector<float>* field;
  size_t elements;
};

/// Where the elements of tensor s (model_tensor_specs(w.config, any layout)) go in w, in the
/// tensor's element order: one field, or for a fused tensor the fields of its row blocks (Phi3
/// qkv_proj: q, k, v; gate_up_proj: gate, up; fused experts.gate_up_proj [E, 2I, H]: per expert
/// its gate then its up; experts.down_proj [E, H, I]: per expert its down). w.layers must hold
/// layer s.layer; the experts of a MoE layer are created here (num_experts of them) when absent.
/// The fields are not resized.
std::vector<TensorDestination> tensor_destinations(ModelWeights& w, const TensorSpec& s);

struct LoadOptions {
  bool show_progress = true;  // progress on stderr when it is a terminal
};

/// Loads DIR (config.json + model.safetensors or sharded index). Checks every tensor's name, dtype
/// (BF16/F16/F32) and shape against the architecture's table (check_checkpoint, model/loader.h).
/// Linear layers stored as AWQ/GPTQ int4 or FP8 (config.json quantization_config) are dequantized
/// to fp32 here (model/quant.h: dequantize), so the weights are those the checkpoint defines and a
/// backend sees no difference. Throws hogwild::Error naming the file or tensor, expected and actual
/// value, and what to do.
ModelWeights load_model(const std::string& model_dir, const LoadOptions& opt = {});

}  // namespace hogwild
