// Model hyper-parameters as read from a Hugging Face `config.json` (one struct for every supported
// family; family quirks are flags, docs/STYLE.md habit 2). Field names are the HF config keys.
// Sources: transformers/models/{qwen2,qwen3,qwen3_moe,llama,mistral,phi3}/configuration_*.py,
//          transformers/modeling_rope_utils.py (rope_scaling).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "model/quant.h"

namespace hogwild {

/// Supported architectures, by `config.json` `architectures[0]`.
enum class Arch { qwen2, qwen3, llama, mistral, phi3, qwen3_moe };

/// "Qwen2ForCausalLM", ... ; arch_from_hf_name throws hogwild::Error listing the supported names.
const char* arch_hf_name(Arch a);
Arch arch_from_hf_name(const std::string& name);
/// Short CLI names: qwen2 qwen3 llama mistral phi3 qwen3_moe.
const char* arch_short_name(Arch a);
Arch arch_from_short_name(const std::string& name);

/// `rope_scaling` (or `rope_parameters` in newer transformers). rope_type: "default", "linear",
/// "llama3", "yarn". Fields not used by a type keep their defaults.
struct RopeScaling {
  std::string rope_type = "default";
  double factor = 1.0;                           // linear, llama3, yarn
  double low_freq_factor = 1.0;                  // llama3
  double high_freq_factor = 4.0;                 // llama3
  int64_t original_max_position_embeddings = 0;  // llama3, yarn (0 = use max_position_embeddings)
  double beta_fast = 32.0;                       // yarn
  double beta_slow = 1.0;                        // yarn
  double attention_factor = 0.0;                 // yarn; 0 = unset -> 0.1*ln(factor)+1
  bool truncate = true;                          // yarn
};

/// One model config for every family.
struct ModelConfig {
  Arch arch = Arch::qwen3;
  int64_t hidden_size = 0;        // d_model
  int64_t intermediate_size = 0;  // MLP inner size
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;  // query heads
  int64_t num_key_value_heads = 0;  // KV heads (GQA when < num_attention_heads)
  int64_t head_dim = 0;             // explicit for Qwen3; else hidden_size / num_attention_heads
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;  // context length the model was trained for
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  double partial_rotary_factor = 1.0;  // fraction of head_dim that is rotated (rotate-half pairing)
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;      // lm_head shares model.embed_tokens.weight
  bool attention_bias = false;           // q/k/v projections have bias (Qwen2: always true)
  bool qk_norm = false;                  // per-head RMSNorm on q and k before RoPE (Qwen3)
  bool fused_qkv = false;                // Phi3: self_attn.qkv_proj
  bool fused_gate_up = false;            // Phi3: mlp.gate_up_proj
  std::string torch_dtype = "bfloat16";  // dtype the checkpoint declares
  std::vector<int64_t> eos_token_id;     // may be a list in config.json
  int64_t bos_token_id = -1;
  /// Sliding-window attention span in tokens (Mistral v0.1: 4096; Phi-3: 2047); 0 = none. Qwen2/3
  /// with `use_sliding_window: true` are rejected at parse time. A backend must refuse contexts
  /// longer than this window unless it implements the window.
  int64_t sliding_window = 0;
  /// config.json `quantization_config` (model/quant.h); method none for dense checkpoints.
  QuantConfig quantization_config;

  // Mixture of experts (Qwen3MoeForCausalLM; configuration_qwen3_moe.py, the decoder layer's choice
  // in modeling_qwen3_moe.py). num_experts is 0 for the dense families. Router logits and training
  // keys (router_aux_loss_coef, output_router_logits) are ignored.
  int64_t num_experts = 0;               // experts per MoE layer (E)
  int64_t num_experts_per_tok = 0;       // experts each token is routed to (top-k), 1..E
  int64_t moe_intermediate_size = 0;     // inner size of each expert's SwiGLU MLP
  bool norm_topk_prob = false;           // renormalise the k chosen probabilities to sum 1
  int64_t decoder_sparse_step = 1;       // every decoder_sparse_step-th layer is MoE (>= 1)
  std::vector<int64_t> mlp_only_layers;  // layers that stay dense (intermediate_size)
  /// "moe_intermediate_size = 768": size fields absent from config.json that took the reference
  /// default (named in the loader's error when the tensors do not match).
  std::vector<std::string> defaulted;

  /// Whether decoder layer `layer` (0-based) is a sparse MoE block, by the rule of
  /// Qwen3MoeDecoderLayer: not in mlp_only_layers, num_experts > 0 and
  /// (layer + 1) % decoder_sparse_step == 0. Every other layer is a dense MLP of
  /// intermediate_size. Always false for the dense families (num_experts 0).
  bool is_moe_layer(int64_t layer) const;
  /// Number of layers for which is_moe_layer holds.
  int64_t num_moe_layers() const;

  /// Rotary dimensions per head = head_dim * partial_rotary_factor (even).
  int64_t rotary_dim() const;
  /// Number of parameters (weights) in the model as loaded.
  int64_t num_parameters() const;
  /// Parameters one token's forward multiplies by: num_parameters() less, in every MoE layer, the
  /// experts it is not routed to ((num_experts - num_experts_per_tok) experts).
  int64_t num_active_parameters() const;
  /// KV cache bytes per token at the given element size (2 for bf16, 4 for fp32).
  int64_t kv_bytes_per_token(int64_t elem_bytes) const;
};

/// Parses a config.json object. Throws hogwild::Error naming the missing/invalid key.
ModelConfig parse_model_config(const nlohmann::json& j);
/// Throws hogwild::Error (saying what to pass) unless model_dir is an existing directory.
void require_model_dir(const std::string& model_dir);
/// Reads DIR/config.json. Throws hogwild::Error if missing/unreadable/invalid.
ModelConfig load_model_config(const std::string& model_dir);
/// Serialises to a config.json object in HF form (used by make-model).
nlohmann::json model_config_to_json(const ModelConfig& c);

}  // namespace hogwild
