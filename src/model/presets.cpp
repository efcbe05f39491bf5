// The model preset table (`hogwild make-model --preset`): tiny test shapes per architecture and the
// real shapes of released checkpoints (values from their config.json on the Hugging Face hub).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/make_model.h"

namespace hogwild {

namespace {

// Family flags (attention_bias for Qwen2, qk_norm, fused Phi3 tensors) exactly as config.json
// parsing derives them.
ModelConfig normalise(const ModelConfig& c) { return parse_model_config(model_config_to_json(c)); }

// Shared tiny shape: GQA 4:2, head_dim 16, two layers, vocab 512.
ModelConfig tiny(Arch a) {
  ModelConfig c;
  c.arch = a;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.vocab_size = 512;
  c.max_position_embeddings = 1024;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000.0;
  c.bos_token_id = 1;
  c.eos_token_id = {2};
  return c;
}

ModelPreset tiny_preset(const std::string& name, ModelConfig c) {
  return ModelPreset{name, normalise(c), 0.1, 0.1, 0.1};
}

ModelPreset real_preset(const std::string& name, ModelConfig c) {
  return ModelPreset{name, normalise(c), 0.02, 0.0, 0.0};
}

// Appends the tiny dense presets, one per architecture plus rope_scaling variants: each shows the
// family quirk its comment names (test shapes, init std 0.1).
void add_tiny_dense_presets(std::vector<ModelPreset>& p) {
  // qwen3: q_norm/k_norm, explicit head_dim 32 != hidden_size/heads, tied embeddings (as 0.6B).
  ModelConfig q3 = tiny(Arch::qwen3);
  q3.head_dim = 32;
  q3.tie_word_embeddings = true;
  q3.rope_theta = 1e6;
  q3.bos_token_id = -1;
  p.push_back(tiny_preset("tiny", q3));
  // qwen3 + YaRN (Qwen3 model cards' long-context setting, scaled down).
  ModelConfig q3y = q3;
  q3y.rope_scaling.rope_type = "yarn";
  q3y.rope_scaling.factor = 4.0;
  q3y.rope_scaling.original_max_position_embeddings = 256;
  p.push_back(tiny_preset("tiny-yarn", q3y));

  // qwen2: q/k/v biases, untied, intermediate 160 (not a power of two).
  ModelConfig q2 = tiny(Arch::qwen2);
  q2.intermediate_size = 160;
  q2.rope_theta = 1e6;
  q2.bos_token_id = -1;
  p.push_back(tiny_preset("tiny", q2));

  // llama: 4 query heads per KV head, llama3 rope_scaling whose original context (128) puts the
  // 8 rotary frequencies of head_dim 16 in all three bands (kept, smoothed, divided by factor).
  ModelConfig ll = tiny(Arch::llama);
  ll.num_key_value_heads = 1;
  ll.rope_theta = 500000.0;
  ll.rms_norm_eps = 1e-5;
  ll.rope_scaling.rope_type = "llama3";
  ll.rope_scaling.factor = 8.0;
  ll.rope_scaling.low_freq_factor = 1.0;
  ll.rope_scaling.high_freq_factor = 4.0;
  ll.rope_scaling.original_max_position_embeddings = 128;
  p.push_back(tiny_preset("tiny", ll));
  ModelConfig lin = tiny(Arch::llama);
  lin.rope_scaling.rope_type = "linear";
  lin.rope_scaling.factor = 2.0;
  p.push_back(tiny_preset("tiny-linear", lin));

  // mistral: explicit head_dim 32 (as Mistral-Nemo: heads*head_dim != hidden_size).
  ModelConfig mi = tiny(Arch::mistral);
  mi.head_dim = 32;
  mi.rope_theta = 1e6;
  mi.rms_norm_eps = 1e-5;
  p.push_back(tiny_preset("tiny", mi));

  // phi3: fused qkv_proj / gate_up_proj, partial rotary 0.75 (12 of 16 dims, as Phi-4-mini).
  ModelConfig ph = tiny(Arch::phi3);
  ph.partial_rotary_factor = 0.75;
  ph.rms_norm_eps = 1e-5;
  p.push_back(tiny_preset("tiny", ph));
}

// Appends the tiny qwen3_moe presets: all layers sparse, dense layers among the sparse ones, and
// top-k probabilities without renormalisation.
void add_tiny_moe_presets(std::vector<ModelPreset>& p) {
  // qwen3_moe (configuration_qwen3_moe.py): 8 experts of inner size 32, top-2 renormalised (as
  // Qwen3-30B-A3B), head_dim 32 != hidden_size/heads; every layer sparse.
  ModelConfig qm = tiny(Arch::qwen3_moe);
  qm.head_dim = 32;
  qm.rope_theta = 1e6;
  qm.bos_token_id = -1;
  qm.num_experts = 8;
  qm.num_experts_per_tok = 2;
  qm.moe_intermediate_size = 32;
  qm.norm_topk_prob = true;
  p.push_back(tiny_preset("tiny", qm));
  // Dense layers among the sparse ones: decoder_sparse_step 2 makes layers 1, 3, 5 sparse and
  // mlp_only_layers [3] keeps 3 dense (intermediate_size 128): sparse 1 and 5 of 6 layers.
  ModelConfig qd = qm;
  qd.num_hidden_layers = 6;
  qd.decoder_sparse_step = 2;
  qd.mlp_only_layers = {3};
  p.push_back(tiny_preset("tiny-dense-layers", qd));
  // norm_topk_prob false (Qwen3MoeConfig's default): the chosen probabilities as they are.
  ModelConfig qn = qm;
  qn.norm_topk_prob = false;
  qn.num_experts_per_tok = 3;
  p.push_back(tiny_preset("tiny-no-norm", qn));
}

// Appends the real shapes of released checkpoints (values from their config.json on the Hugging
// Face hub; init std 0.02 as transformers' initializer_range).
void add_real_presets(std::vector<ModelPreset>& p) {
  ModelConfig r;
  r.arch = Arch::qwen3;  // Qwen/Qwen3-0.6B
  r.hidden_size = 1024, r.intermediate_size = 3072, r.num_hidden_layers = 28;
  r.num_attention_heads = 16, r.num_key_value_heads = 8, r.head_dim = 128;
  r.vocab_size = 151936, r.max_position_embeddings = 40960, r.rms_norm_eps = 1e-6;
  r.rope_theta = 1e6, r.tie_word_embeddings = true;
  r.bos_token_id = 151643, r.eos_token_id = {151645};
  p.push_back(real_preset("qwen3-0.6b", r));
  r.hidden_size = 4096, r.intermediate_size = 12288, r.num_hidden_layers = 36;  // Qwen/Qwen3-8B
  r.num_attention_heads = 32, r.num_key_value_heads = 8, r.tie_word_embeddings = false;
  p.push_back(real_preset("qwen3-8b", r));

  r = ModelConfig();
  r.arch = Arch::qwen2;  // Qwen/QwQ-32B
  r.hidden_size = 5120, r.intermediate_size = 27648, r.num_hidden_layers = 64;
  r.num_attention_heads = 40, r.num_key_value_heads = 8, r.head_dim = 128;
  r.vocab_size = 152064, r.max_position_embeddings = 40960, r.rms_norm_eps = 1e-5;
  r.rope_theta = 1e6, r.bos_token_id = 151643, r.eos_token_id = {151645};
  p.push_back(real_preset("qwq-32b", r));

  r = ModelConfig();
  r.arch = Arch::llama;  // meta-llama/Llama-3.1-8B-Instruct
  r.hidden_size = 4096, r.intermediate_size = 14336, r.num_hidden_layers = 32;
  r.num_attention_heads = 32, r.num_key_value_heads = 8, r.head_dim = 128;
  r.vocab_size = 128256, r.max_position_embeddings = 131072, r.rms_norm_eps = 1e-5;
  r.rope_theta = 500000.0;
  r.rope_scaling.rope_type = "llama3", r.rope_scaling.factor = 8.0;
  r.rope_scaling.low_freq_factor = 1.0, r.rope_scaling.high_freq_factor = 4.0;
  r.rope_scaling.original_max_position_embeddings = 8192;
  r.bos_token_id = 128000, r.eos_token_id = {128001, 128008, 128009};
  p.push_back(real_preset("llama-3.1-8b", r));

  r = ModelConfig();
  r.arch = Arch::phi3;  // microsoft/phi-4
  r.hidden_size = 5120, r.intermediate_size = 17920, r.num_hidden_layers = 40;
  r.num_attention_heads = 40, r.num_key_value_heads = 10, r.head_dim = 128;
  r.vocab_size = 100352, r.max_position_embeddings = 16384, r.rms_norm_eps = 1e-5;
  r.rope_theta = 250000.0, r.bos_token_id = 100257, r.eos_token_id = {100265};
  p.push_back(real_preset("phi-4", r));

  r = ModelConfig();
  r.arch = Arch::qwen3_moe;  // Qwen/Qwen3-30B-A3B
  r.hidden_size = 2048, r.intermediate_size = 6144, r.num_hidden_layers = 48;
  r.num_attention_heads = 32, r.num_key_value_heads = 4, r.head_dim = 128;
  r.vocab_size = 151936, r.max_position_embeddings = 40960, r.rms_norm_eps = 1e-6;
  r.rope_theta = 1e6, r.bos_token_id = 151643, r.eos_token_id = {151645};
  r.num_experts = 128, r.num_experts_per_tok = 8, r.moe_intermediate_size = 768;
  r.norm_topk_prob = true, r.decoder_sparse_step = 1;
  p.push_back(real_preset("qwen3-30b-a3b", r));
  r.hidden_size = 4096, r.intermediate_size = 12288, r.num_hidden_layers = 94;  // Qwen3-235B-A22B
  r.num_attention_heads = 64, r.moe_intermediate_size = 1536;
  p.push_back(real_preset("qwen3-235b-a22b", r));
}

std::vector<ModelPreset> build_presets() {
  std::vector<ModelPreset> p;
  add_tiny_dense_presets(p);
  add_tiny_moe_presets(p);
  add_real_presets(p);
  return p;
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = build_presets();
  return presets;
}

const ModelPreset& preset_named(const std::string& name) {
  std::vector<std::string> names;  // each once, in the table's order
  for (const ModelPreset& p : model_presets()) {
    if (p.name == name) return p;
    if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  }
  fail("unknown preset '{}'; presets: {}", name, fmt::join(names, ", "));
}

ModelPreset find_preset(Arch arch, const std::string& name) {
  std::string names;
  const ModelPreset* other = nullptr;
  for (const ModelPreset& p : model_presets()) {
    if (p.name == name && p.config.arch == arch) return p;
    if (p.name == name) other = &p;
    names +=
        fmt::format("{}{} ({})", names.empty() ? "" : ", ", p.name, arch_short_name(p.config.arch));
  }
  if (other)
    fail("preset {} is a {} model; use --arch {}", name, arch_short_name(other->config.arch),
         arch_short_name(other->config.arch));
  fail("unknown preset \"{}\" for --arch {}; presets: {}", name, arch_short_name(arch), names);
}

}  // namespace hogwild
