// config.json parsing for every family, checked against the real Hugging Face configs (values
// copied from the hub's config.json files) and hand-computed parameter counts / KV sizes.
#include <nlohmann/json.hpp>

#include "model/config.h"
#include "model/make_model.h"
#include "model/tensor_names.h"
#include "tests/model/test_util.h"

namespace hogwild {
namespace {

using nlohmann::json;
using test::expect_error;

// Qwen/Qwen3-8B config.json.
const char* kQwen3_8B = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 12288,
  "max_position_embeddings": 40960, "max_window_layers": 36, "model_type": "qwen3",
  "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

// Qwen/Qwen3-0.6B config.json (tied embeddings, head_dim 128 with hidden_size 1024 / 16 heads).
const char* kQwen3_06B = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "bos_token_id": 151643,
  "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
  "intermediate_size": 3072, "max_position_embeddings": 40960, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "use_sliding_window": false,
  "vocab_size": 151936})";

// Qwen/QwQ-32B config.json (Qwen2: no attention_bias key, biases anyway; no head_dim key).
const char* kQwQ_32B = R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02,
  "intermediate_size": 27648, "max_position_embeddings": 40960, "max_window_layers": 64,
  "model_type": "qwen2", "num_attention_heads": 40, "num_hidden_layers": 64,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
  "sliding_window": 32768, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.43.1", "use_cache": true, "use_sliding_window": false,
  "vocab_size": 152064})";

// meta-llama/Llama-3.1-8B-Instruct config.json.
const char* kLlama31_8B = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
  "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.42.3", "use_cache": true, "vocab_size": 128256})";

// mistralai/Mistral-7B-v0.1 config.json (sliding window 4096).
const char* kMistral7B = R"({
  "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
  "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
  "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 32000})";

// mistralai/Mistral-Nemo-Instruct-2407 config.json (head_dim 128 != 5120 / 32).
const char* kMistralNemo = R"({
  "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
  "eos_token_id": 2, "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120,
  "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 1024000,
  "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 40,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "use_cache": true, "vocab_size": 131072})";

// microsoft/phi-4 config.json.
const char* kPhi4 = R"({
  "architectures": ["Phi3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 100257, "embd_pdrop": 0.0, "eos_token_id": 100265, "hidden_act": "silu",
  "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 17920,
  "max_position_embeddings": 16384, "model_type": "phi3", "num_attention_heads": 40,
  "num_hidden_layers": 40, "num_key_value_heads": 10, "original_max_position_embeddings": 16384,
  "pad_token_id": 100349, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_scaling": null,
  "rope_theta": 250000, "sliding_window": null, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.47.0", "use_cache": true,
  "vocab_size": 100352})";

// Qwen/Qwen3-30B-A3B config.json (128 experts, top-8, renormalised; every layer sparse).
const char* kQwen3_30B_A3B = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
  "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
  "intermediate_size": 6144, "max_position_embeddings": 40960, "max_window_layers": 48,
  "mlp_only_layers": [], "model_type": "qwen3_moe", "moe_intermediate_size": 768,
  "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128,
  "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
  "output_router_logits": false, "rms_norm_eps": 1e-06, "rope_scaling": null,
  "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "sliding_window": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

// config.json as transformers 5.17 save_pretrained writes a Qwen3MoeForCausalLM (a small random
// model): "num_local_experts" for num_experts, rope_parameters, "dtype".
const char* kQwen3MoeSaved5_17 = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": null, "decoder_sparse_step": 2, "dtype": "float32", "eos_token_id": null,
  "head_dim": 32, "hidden_act": "silu", "hidden_size": 64, "initializer_range": 0.1,
  "intermediate_size": 128, "max_position_embeddings": 1024, "mlp_only_layers": [3],
  "model_type": "qwen3_moe", "moe_intermediate_size": 32, "norm_topk_prob": true,
  "num_attention_heads": 4, "num_experts_per_tok": 2, "num_hidden_layers": 6,
  "num_key_value_heads": 2, "num_local_experts": 8, "output_router_logits": false,
  "pad_token_id": null, "rms_norm_eps": 1e-06,
  "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
  "router_aux_loss_coef": 0.001, "sliding_window": null, "tie_word_embeddings": false,
  "transformers_version": "5.17.0", "use_cache": true, "use_sliding_window": false,
  "vocab_size": 512})";

ModelConfig parse(const char* s) { return parse_model_config(json::parse(s)); }

TEST(ModelConfig, Qwen3_8B) {
  ModelConfig c = parse(kQwen3_8B);
  EXPECT_EQ(c.arch, Arch::qwen3);
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.num_hidden_layers, 36);
  EXPECT_EQ(c.num_attention_heads, 32);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.intermediate_size, 12288);
  EXPECT_EQ(c.vocab_size, 151936);
  EXPECT_EQ(c.max_position_embeddings, 40960);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_scaling.rope_type, "default");
  EXPECT_EQ(c.rotary_dim(), 128);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.fused_qkv || c.fused_gate_up);
  EXPECT_EQ(c.bos_token_id, 151643);
  EXPECT_EQ(c.eos_token_id, std::vector<int64_t>{151645});
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.num_parameters(), 8190735360);   // "8.2B" on the model card
  EXPECT_EQ(c.kv_bytes_per_token(2), 147456);  // 2 (K,V) * 36 * 8 * 128 * 2 bytes
  EXPECT_EQ(c.kv_bytes_per_token(4), 294912);
}

TEST(ModelConfig, Qwen3_06B_TiedAndHeadDimNotHiddenOverHeads) {
  ModelConfig c = parse(kQwen3_06B);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.head_dim, 128);  // 1024 / 16 would be 64
  EXPECT_EQ(c.num_parameters(), 596049920);
  // Qwen3Config's default head_dim is 128 when the key is absent.
  json j = json::parse(kQwen3_06B);
  j.erase("head_dim");
  EXPECT_EQ(parse_model_config(j).head_dim, 128);
}

TEST(ModelConfig, QwQ32B_Qwen2AlwaysHasBias) {
  ModelConfig c = parse(kQwQ_32B);
  EXPECT_EQ(c.arch, Arch::qwen2);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 128);  // 5120 / 40
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.vocab_size, 152064);
  EXPECT_EQ(c.sliding_window, 0);  // use_sliding_window false: sliding_window is ignored
  EXPECT_EQ(c.num_parameters(), 32763876352);  // "32.5B" model card counts without embeddings
  EXPECT_EQ(c.kv_bytes_per_token(2), 262144);  // 256 KiB per token
  json j = json::parse(kQwQ_32B);
  j["use_sliding_window"] = true;
  expect_error([&] { parse_model_config(j); }, {"use_sliding_window", "not supported"});
}

TEST(ModelConfig, Llama31_8B_Llama3RopeScalingAndEosList) {
  ModelConfig c = parse(kLlama31_8B);
  EXPECT_EQ(c.arch, Arch::llama);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.rope_type, "llama3");
  EXPECT_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_EQ(c.rope_scaling.low_freq_factor, 1.0);
  EXPECT_EQ(c.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.eos_token_id, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(c.bos_token_id, 128000);
  EXPECT_FALSE(c.attention_bias || c.qk_norm);
  EXPECT_EQ(c.num_parameters(), 8030261248);
  json j = json::parse(kLlama31_8B);
  j["mlp_bias"] = true;
  expect_error([&] { parse_model_config(j); }, {"mlp_bias"});
  j = json::parse(kLlama31_8B);
  j["attention_bias"] = true;  // would add an o_proj bias too (LlamaAttention)
  expect_error([&] { parse_model_config(j); }, {"\"attention_bias\": true is not supported"});
}

TEST(ModelConfig, Mistral) {
  ModelConfig c = parse(kMistral7B);
  EXPECT_EQ(c.arch, Arch::mistral);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(c.num_parameters(), 7241732096);
  ModelConfig n = parse(kMistralNemo);
  EXPECT_EQ(n.head_dim, 128);
  EXPECT_EQ(n.hidden_size, 5120);
  EXPECT_EQ(n.sliding_window, 0);
  EXPECT_EQ(n.num_parameters(), 12247782400);
  json j = json::parse(kMistral7B);
  j["head_dim"] = nullptr;  // some Mistral configs say "head_dim": null
  EXPECT_EQ(parse_model_config(j).head_dim, 128);
}

TEST(ModelConfig, Phi4_FusedTensors) {
  ModelConfig c = parse(kPhi4);
  EXPECT_EQ(c.arch, Arch::phi3);
  EXPECT_TRUE(c.fused_qkv);
  EXPECT_TRUE(c.fused_gate_up);
  EXPECT_FALSE(c.attention_bias || c.qk_norm);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.num_key_value_heads, 10);
  EXPECT_EQ(c.partial_rotary_factor, 1.0);
  EXPECT_EQ(c.rope_theta, 250000.0);
  EXPECT_EQ(c.num_parameters(), 14659507200);  // "14B" (14.7B)
  json j = json::parse(kPhi4);
  j["partial_rotary_factor"] = 0.75;  // Phi-4-mini
  EXPECT_EQ(parse_model_config(j).rotary_dim(), 96);
}

TEST(ModelConfig, Qwen3_30B_A3B_MixtureOfExperts) {
  ModelConfig c = parse(kQwen3_30B_A3B);
  EXPECT_EQ(c.arch, Arch::qwen3_moe);
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.num_experts_per_tok, 8);
  EXPECT_EQ(c.moe_intermediate_size, 768);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_EQ(c.decoder_sparse_step, 1);
  EXPECT_TRUE(c.mlp_only_layers.empty());
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.num_moe_layers(), 48);
  // embed + lm_head 2*151936*2048; per layer attention 18874368 + norms 4352 + router 128*2048
  // + experts 128*3*2048*768; final norm 2048. Active: 8 of the 128 experts.
  EXPECT_EQ(c.num_parameters(), 30532122624);        // "30.5B" on the model card
  EXPECT_EQ(c.num_active_parameters(), 3353032704);  // "3.3B activated"
  EXPECT_EQ(c.kv_bytes_per_token(2), 2 * 48 * 4 * 128 * 2);
  // Qwen3MoeConfig has no head_dim default: hidden_size / num_attention_heads.
  json j = json::parse(kQwen3_30B_A3B);
  j.erase("head_dim");
  EXPECT_EQ(parse_model_config(j).head_dim, 64);
  // HF defaults of the MoE keys.
  for (const char* k : {"num_experts", "num_experts_per_tok", "moe_intermediate_size",
                        "norm_topk_prob", "decoder_sparse_step", "mlp_only_layers"})
    j.erase(k);
  ModelConfig d = parse_model_config(j);
  EXPECT_EQ(d.num_experts, 128);
  // transformers 5.x writes num_experts as "num_local_experts" (Qwen3MoeConfig.attribute_map).
  json local = json::parse(kQwen3_30B_A3B);
  local.erase("num_experts");
  local["num_local_experts"] = 64;
  EXPECT_EQ(parse_model_config(local).num_experts, 64);
  local["num_experts"] = 32;
  expect_error([&] { parse_model_config(local); },
               {"\"num_experts\" (32) and \"num_local_experts\" (64) disagree"});
  EXPECT_EQ(d.num_experts_per_tok, 8);
  EXPECT_EQ(d.moe_intermediate_size, 768);
  EXPECT_FALSE(d.norm_topk_prob);
  EXPECT_EQ(d.decoder_sparse_step, 1);
}

TEST(ModelConfig, Qwen3MoeAsTransformers5Saves) {
  const ModelConfig c = parse(kQwen3MoeSaved5_17);
  EXPECT_EQ(c.num_experts, 8);
  EXPECT_EQ(c.num_experts_per_tok, 2);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.torch_dtype, "float32");
  EXPECT_EQ(c.num_moe_layers(), 2);  // layers 1 and 5 (3 is in mlp_only_layers)
  EXPECT_TRUE(c.is_moe_layer(1) && c.is_moe_layer(5));
}

TEST(ModelConfig, MoeLayerRule) {
  // Qwen3MoeDecoderLayer: sparse unless in mlp_only_layers, when (layer + 1) % step == 0.
  json j = json::parse(kQwen3_30B_A3B);
  j["num_hidden_layers"] = 6;
  j["decoder_sparse_step"] = 2;
  j["mlp_only_layers"] = {3};
  ModelConfig c = parse_model_config(j);
  std::vector<bool> moe;
  for (int64_t l = 0; l < 6; ++l) moe.push_back(c.is_moe_layer(l));
  EXPECT_EQ(moe, (std::vector<bool>{false, true, false, false, false, true}));
  EXPECT_EQ(c.num_moe_layers(), 2);
  EXPECT_FALSE(c.is_moe_layer(-1));
  EXPECT_FALSE(c.is_moe_layer(6));
  // Parameters: 4 dense MLPs of 3*2048*6144 and 2 MoE blocks.
  const int64_t attn = 18874368 + 4352, dense = 3 * 2048 * 6144,
                moe_block = 128 * 2048 + 128 * 3 * 2048 * 768;
  EXPECT_EQ(c.num_parameters(), 2 * 151936 * 2048 + 2048 + 6 * attn + 4 * dense + 2 * moe_block);
  EXPECT_EQ(c.num_active_parameters(), c.num_parameters() - 2 * 120 * 3 * 2048 * 768);
  // num_experts 0: every layer dense (the expert keys are not checked).
  j["num_experts"] = 0;
  j["num_experts_per_tok"] = 99;
  c = parse_model_config(j);
  EXPECT_EQ(c.num_moe_layers(), 0);
  // The dense families have no MoE layer.
  EXPECT_FALSE(parse(kQwen3_8B).is_moe_layer(0));
  EXPECT_EQ(parse(kQwen3_8B).num_active_parameters(), parse(kQwen3_8B).num_parameters());
}

TEST(ModelConfig, BadMoeConfigsSayWhatIsWrong) {
  json j = json::parse(kQwen3_30B_A3B);
  j["num_experts_per_tok"] = 129;
  expect_error([&] { parse_model_config(j); },
               {"\"num_experts_per_tok\" (129)", "between 1 and \"num_experts\" (128)"});
  j["num_experts_per_tok"] = 0;
  expect_error([&] { parse_model_config(j); }, {"\"num_experts_per_tok\" (0)"});
  j = json::parse(kQwen3_30B_A3B);
  j["decoder_sparse_step"] = 0;
  expect_error([&] { parse_model_config(j); }, {"\"decoder_sparse_step\" must be positive"});
  j = json::parse(kQwen3_30B_A3B);
  j["mlp_only_layers"] = {0, 48};
  expect_error([&] { parse_model_config(j); }, {"\"mlp_only_layers\" holds layer 48", "0..47"});
  j["mlp_only_layers"] = "all";
  expect_error([&] { parse_model_config(j); }, {"\"mlp_only_layers\" must be a list"});
  j["mlp_only_layers"] = {1.5};
  expect_error([&] { parse_model_config(j); }, {"entries must be integers"});
  j = json::parse(kQwen3_30B_A3B);
  j["moe_intermediate_size"] = 0;
  expect_error([&] { parse_model_config(j); }, {"\"moe_intermediate_size\" must be positive"});
  j = json::parse(kQwen3_30B_A3B);
  j["num_experts"] = -1;
  expect_error([&] { parse_model_config(j); }, {"\"num_experts\" must be >= 0"});
  j = json::parse(kQwen3_30B_A3B);
  j["norm_topk_prob"] = 1;
  expect_error([&] { parse_model_config(j); }, {"\"norm_topk_prob\" must be true or false"});
  j = json::parse(kQwen3_30B_A3B);
  j["use_sliding_window"] = true;
  expect_error([&] { parse_model_config(j); }, {"use_sliding_window"});
}

TEST(ModelConfig, RopeScalingTypes) {
  json j = json::parse(kQwen3_8B);
  j["rope_scaling"] = {
      {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  ModelConfig c = parse_model_config(j);
  EXPECT_EQ(c.rope_scaling.rope_type, "yarn");
  EXPECT_EQ(c.rope_scaling.factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 32768);
  EXPECT_EQ(c.rope_scaling.beta_fast, 32.0);
  EXPECT_EQ(c.rope_scaling.beta_slow, 1.0);
  EXPECT_EQ(c.rope_scaling.attention_factor, 0.0);
  EXPECT_TRUE(c.rope_scaling.truncate);
  // Legacy "type" key.
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  EXPECT_EQ(parse_model_config(j).rope_scaling.rope_type, "linear");
  EXPECT_EQ(parse_model_config(j).rope_scaling.factor, 2.0);
  // Newer transformers: rope_parameters, with rope_theta inside.
  j.erase("rope_scaling");
  j.erase("rope_theta");
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 5e6}};
  EXPECT_EQ(parse_model_config(j).rope_theta, 5e6);
  EXPECT_EQ(parse_model_config(j).rope_scaling.rope_type, "default");
  for (const char* t : {"dynamic", "longrope", "su"}) {
    j = json::parse(kPhi4);
    j["rope_scaling"] = {{"type", t}, {"factor", 2.0}, {"short_factor", {1.0}}};
    expect_error([&] { parse_model_config(j); }, {std::string("\"") + t + "\" is not supported",
                                                  "default, linear, llama3 and yarn"});
  }
  j = json::parse(kLlama31_8B);
  j["rope_scaling"].erase("original_max_position_embeddings");
  expect_error([&] { parse_model_config(j); }, {"llama3", "original_max_position_embeddings"});
}

TEST(ModelConfig, BadConfigsSayWhatIsWrong) {
  expect_error([] { parse_model_config(json::parse(R"({"hidden_size": 8})")); },
               {"no \"architectures\"", "Qwen3ForCausalLM"});
  expect_error([] { parse_model_config(json::parse(R"({"architectures": ["GPT2LMHeadModel"]})")); },
               {"\"GPT2LMHeadModel\" is not supported",
                "Qwen2ForCausalLM, Qwen3ForCausalLM, "
                "LlamaForCausalLM, MistralForCausalLM, Phi3ForCausalLM"});
  json j = json::parse(kQwen3_8B);
  j.erase("hidden_size");
  expect_error([&] { parse_model_config(j); }, {"no \"hidden_size\""});
  j = json::parse(kQwen3_8B);
  j["num_hidden_layers"] = "many";
  expect_error([&] { parse_model_config(j); }, {"\"num_hidden_layers\" must be an integer"});
  j = json::parse(kQwen3_8B);
  j["num_key_value_heads"] = 5;
  expect_error([&] { parse_model_config(j); }, {"multiple of num_key_value_heads (5)"});
  j = json::parse(kQwen3_8B);
  j["vocab_size"] = -3;
  expect_error([&] { parse_model_config(j); }, {"\"vocab_size\" must be positive"});
  j = json::parse(kQwen3_8B);
  j["hidden_act"] = "gelu";
  expect_error([&] { parse_model_config(j); }, {"hidden_act", "gelu"});
  j = json::parse(kQwen3_8B);
  j["rope_scaling"] = "yes";
  expect_error([&] { parse_model_config(j); }, {"rope_scaling", "object"});
  expect_error([] { parse_model_config(json::array()); }, {"not a JSON object"});
  expect_error([] { load_model_config("/nonexistent/dir"); },
               {"/nonexistent/dir", "does not exist"});
  test::TempDir d;
  expect_error([&] { load_model_config(d.str()); }, {"config.json is missing"});
  test::write_file(d / "config.json", "{\"architectures\": [");
  expect_error([&] { load_model_config(d.str()); }, {"config.json is not valid JSON"});
}

TEST(ModelConfig, ArchNames) {
  EXPECT_EQ(arch_from_short_name("phi3"), Arch::phi3);
  EXPECT_STREQ(arch_hf_name(Arch::mistral), "MistralForCausalLM");
  EXPECT_STREQ(arch_short_name(Arch::qwen2), "qwen2");
  expect_error([] { arch_from_short_name("gpt2"); }, {"qwen2, qwen3, llama, mistral, phi3"});
}

TEST(ModelConfig, ToJsonRoundTripsEveryPreset) {
  for (const ModelPreset& p : model_presets()) {
    SCOPED_TRACE(p.name);
    json j = model_config_to_json(p.config);
    EXPECT_EQ(j["architectures"][0], arch_hf_name(p.config.arch));
    ModelConfig c = parse_model_config(j);
    EXPECT_EQ(model_config_to_json(c), j);
    EXPECT_EQ(c.head_dim, p.config.head_dim);
    EXPECT_EQ(c.attention_bias, p.config.attention_bias);
    EXPECT_EQ(c.rope_scaling.rope_type, p.config.rope_scaling.rope_type);
    EXPECT_EQ(c.num_parameters(), p.config.num_parameters());
  }
  // The real presets equal the hub configs above.
  ModelPreset q = find_preset(Arch::qwen3, "qwen3-8b");
  EXPECT_EQ(q.config.num_parameters(), parse(kQwen3_8B).num_parameters());
  EXPECT_EQ(find_preset(Arch::qwen2, "qwq-32b").config.num_parameters(),
            parse(kQwQ_32B).num_parameters());
  EXPECT_EQ(find_preset(Arch::llama, "llama-3.1-8b").config.num_parameters(), 8030261248);
  EXPECT_EQ(find_preset(Arch::phi3, "phi-4").config.num_parameters(), 14659507200);
  EXPECT_EQ(find_preset(Arch::qwen3, "qwen3-0.6b").config.num_parameters(), 596049920);
  // Qwen3-MoE: the hub config above, and Qwen3-235B-A22B's 235B total / 22B active (94 layers,
  // hidden 4096, 64 query heads, 1536 per expert).
  EXPECT_EQ(model_config_to_json(find_preset(Arch::qwen3_moe, "qwen3-30b-a3b").config),
            model_config_to_json(parse(kQwen3_30B_A3B)));
  const ModelConfig big = find_preset(Arch::qwen3_moe, "qwen3-235b-a22b").config;
  EXPECT_EQ(big.num_parameters(), 235093634560);
  EXPECT_EQ(big.num_active_parameters(), 22190763520);
  const ModelConfig dl = find_preset(Arch::qwen3_moe, "tiny-dense-layers").config;
  EXPECT_EQ(dl.num_moe_layers(), 2);
  EXPECT_FALSE(find_preset(Arch::qwen3_moe, "tiny-no-norm").config.norm_topk_prob);
}

TEST(TensorTable, Qwen3MoeLayers) {
  const ModelConfig c = find_preset(Arch::qwen3_moe, "tiny-dense-layers").config;
  std::vector<std::string> layer1, layer3, fused1;
  for (const TensorSpec& s : model_tensor_specs(c)) {
    if (s.layer == 1 && s.name.find(".mlp.") != std::string::npos) layer1.push_back(s.name);
    if (s.layer == 3 && s.name.find(".mlp.") != std::string::npos) layer3.push_back(s.name);
    if (s.kind == TensorKind::expert_down_proj && s.layer == 1 && s.expert == 7) {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{64, 32}));
    }
    if (s.kind == TensorKind::router) {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{8, 64}));
    }
  }
  // Sparse layer 1: the router, then 8 experts x (gate, up, down); dense layer 3: the MLP.
  ASSERT_EQ(layer1.size(), 1u + 8 * 3);
  EXPECT_EQ(layer1[0], "model.layers.1.mlp.gate.weight");
  EXPECT_EQ(layer1[1], "model.layers.1.mlp.experts.0.gate_proj.weight");
  EXPECT_EQ(layer1[2], "model.layers.1.mlp.experts.0.up_proj.weight");
  EXPECT_EQ(layer1[24], "model.layers.1.mlp.experts.7.down_proj.weight");
  EXPECT_EQ(layer3, (std::vector<std::string>{"model.layers.3.mlp.gate_proj.weight",
                                              "model.layers.3.mlp.up_proj.weight",
                                              "model.layers.3.mlp.down_proj.weight"}));
  for (const TensorSpec& s : model_tensor_specs(c, ExpertLayout::fused))
    if (s.layer == 1 && s.name.find(".mlp.") != std::string::npos) fused1.push_back(s.name);
  EXPECT_EQ(fused1, (std::vector<std::string>{"model.layers.1.mlp.gate.weight",
                                              "model.layers.1.mlp.experts.gate_up_proj",
                                              "model.layers.1.mlp.experts.down_proj"}));
  for (const TensorSpec& s : model_tensor_specs(c, ExpertLayout::fused)) {
    if (s.kind == TensorKind::experts_gate_up_proj) {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{8, 64, 64}));
    }
    if (s.kind == TensorKind::experts_down_proj) {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{8, 64, 32}));
    }
  }
  EXPECT_TRUE(is_expert_tensor(TensorKind::experts_down_proj));
  EXPECT_FALSE(is_expert_tensor(TensorKind::router));
  // The dense families are unchanged: no MoE tensor.
  for (const TensorSpec& s : model_tensor_specs(find_preset(Arch::qwen3, "tiny").config))
    EXPECT_FALSE(is_expert_tensor(s.kind) || s.kind == TensorKind::router) << s.name;
}

}  // namespace
}  // namespace hogwild
