// For tests: tiny random-weight models built in memory (no files), one per architecture flag set.
#pragma once

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "model/weights.h"

namespace hogwild::test {

/// splitmix64-based uniform floats in [-a, a); deterministic for a seed.
struct TestRng {
  uint64_t s;
  explicit TestRng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  float uniform(float a) { return static_cast<float>((next() >> 40) * 0x1.0p-24 * 2.0 - 1.0) * a; }
  std::vector<float> vec(int64_t n, float a, float center = 0.0f) {
    std::vector<float> v(n);
    for (auto& x : v) x = center + uniform(a);
    return v;
  }
};

/// Flag set of a tiny model (sizes chosen odd-ish so layout bugs show).
struct TinySpec {
  std::string name;
  Arch arch = Arch::qwen3;
  bool attention_bias = false;
  bool qk_norm = false;
  bool tie = false;
  int64_t n_heads = 4, n_kv_heads = 2, head_dim = 8;
  double partial_rotary = 1.0;
  RopeScaling rope;
  // Qwen3-MoE (arch qwen3_moe): experts per MoE layer (0 = dense), top-k, expert inner size.
  int64_t n_experts = 0, top_k = 0, moe_inter = 0;
  bool norm_topk = true;
  int64_t sparse_step = 1;
  std::vector<int64_t> mlp_only = {};
};

/// gtest prints the spec by name.
inline void PrintTo(const TinySpec& s, std::ostream* os) { *os << s.name; }

inline ModelConfig tiny_config(const TinySpec& s) {
  ModelConfig c;
  c.arch = s.arch;
  c.hidden_size = 24;
  c.intermediate_size = 40;
  c.num_hidden_layers = s.n_experts > 0 ? 3 : 2;
  c.num_attention_heads = s.n_heads;
  c.num_key_value_heads = s.n_kv_heads;
  c.head_dim = s.head_dim;
  c.vocab_size = 53;
  c.max_position_embeddings = 256;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000.0;
  c.partial_rotary_factor = s.partial_rotary;
  c.rope_scaling = s.rope;
  c.tie_word_embeddings = s.tie;
  c.attention_bias = s.attention_bias;
  c.qk_norm = s.qk_norm;
  c.num_experts = s.n_experts;
  c.num_experts_per_tok = s.top_k;
  c.moe_intermediate_size = s.moe_inter;
  c.norm_topk_prob = s.norm_topk;
  c.decoder_sparse_step = s.sparse_step;
  c.mlp_only_layers = s.mlp_only;
  return c;
}

/// Random weights for cfg; norms near 1 so activations stay O(1).
inline ModelWeights tiny_weights(const ModelConfig& c, uint64_t seed) {
  TestRng r(seed);
  ModelWeights w;
  w.config = c;
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t qd = c.num_attention_heads * c.head_dim, kvd = c.num_key_value_heads * c.head_dim;
  const float a = 1.0f / std::sqrt(static_cast<float>(H));
  w.embed_tokens = r.vec(c.vocab_size * H, 1.0f);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerWeights L;
    L.input_layernorm = r.vec(H, 0.2f, 1.0f);
    L.q_proj = r.vec(qd * H, 2 * a);
    L.k_proj = r.vec(kvd * H, 2 * a);
    L.v_proj = r.vec(kvd * H, a);
    if (c.attention_bias) {
      L.q_bias = r.vec(qd, 0.5f);
      L.k_bias = r.vec(kvd, 0.5f);
      L.v_bias = r.vec(kvd, 0.5f);
    }
    if (c.qk_norm) {
      L.q_norm = r.vec(c.head_dim, 0.5f, 1.5f);
      L.k_norm = r.vec(c.head_dim, 0.5f, 1.5f);
    }
    L.o_proj = r.vec(H * qd, a);
    L.post_attention_layernorm = r.vec(H, 0.2f, 1.0f);
    if (c.is_moe_layer(l)) {  // router logits O(1), so the routing differs from row to row
      const int64_t MI = c.moe_intermediate_size;
      L.router = r.vec(c.num_experts * H, 4 * a);
      L.experts.resize(static_cast<size_t>(c.num_experts));
      for (ExpertWeights& e : L.experts) {
        e.gate_proj = r.vec(MI * H, a);
        e.up_proj = r.vec(MI * H, a);
        e.down_proj = r.vec(H * MI, 1.0f / std::sqrt(static_cast<float>(MI)));
      }
      w.layers.push_back(std::move(L));
      continue;
    }
    L.gate_proj = r.vec(I * H, a);
    L.up_proj = r.vec(I * H, a);
    L.down_proj = r.vec(H * I, 1.0f / std::sqrt(static_cast<float>(I)));
    w.layers.push_back(std::move(L));
  }
  w.norm = r.vec(H, 0.2f, 1.0f);
  if (!c.tie_word_embeddings) w.lm_head = r.vec(c.vocab_size * H, a);
  return w;
}

/// A spec with the given flags (named arguments would trip -Wmissing-field-initializers).
inline TinySpec tiny_spec(std::string name, Arch arch, bool bias, bool qk_norm, bool tie,
                          int64_t n_heads = 4, int64_t n_kv_heads = 2, int64_t head_dim = 8,
                          double partial_rotary = 1.0) {
  TinySpec s;
  s.name = std::move(name);
  s.arch = arch;
  s.attention_bias = bias;
  s.qk_norm = qk_norm;
  s.tie = tie;
  s.n_heads = n_heads;
  s.n_kv_heads = n_kv_heads;
  s.head_dim = head_dim;
  s.partial_rotary = partial_rotary;
  return s;
}

/// A Qwen3-MoE spec: 3 layers, 6 experts of inner size 12, top-2 (renormalised unless
/// norm_topk false); mlp_only keeps those layers dense.
inline TinySpec tiny_moe_spec(std::string name, bool norm_topk = true,
                              std::vector<int64_t> mlp_only = {}, int64_t sparse_step = 1) {
  TinySpec s = tiny_spec(std::move(name), Arch::qwen3_moe, false, true, false);
  s.n_experts = 6;
  s.top_k = 2;
  s.moe_inter = 12;
  s.norm_topk = norm_topk;
  s.mlp_only = std::move(mlp_only);
  s.sparse_step = sparse_step;
  return s;
}

/// The flag sets every backend test sweeps.
inline std::vector<TinySpec> tiny_specs() {
  std::vector<TinySpec> v;
  v.push_back(tiny_spec("llama_mha", Arch::llama, false, false, false, 4, 4));
  v.push_back(tiny_spec("qwen2_bias_gqa", Arch::qwen2, true, false, false));
  v.push_back(tiny_spec("qwen3_qknorm_tied", Arch::qwen3, false, true, true, 6, 2, 10));
  v.push_back(tiny_spec("phi3_partial_mqa", Arch::phi3, false, false, false, 3, 1, 16, 0.75));
  TinySpec yarn = tiny_spec("qwen3_yarn", Arch::qwen3, false, true, false);
  yarn.rope.rope_type = "yarn";
  yarn.rope.factor = 4.0;
  yarn.rope.original_max_position_embeddings = 64;
  v.push_back(yarn);
  TinySpec l3 = tiny_spec("llama3_rope_tied", Arch::llama, false, false, true);
  l3.rope.rope_type = "llama3";
  l3.rope.factor = 8.0;
  l3.rope.original_max_position_embeddings = 32;
  v.push_back(l3);
  return v;
}

/// The Qwen3-MoE flag sets (kept apart from tiny_specs: not every backend runs MoE layers).
inline std::vector<TinySpec> tiny_moe_specs() {
  return {tiny_moe_spec("qwen3_moe_top2"),
          tiny_moe_spec("qwen3_moe_no_norm_dense_layer", /*norm_topk=*/false, {1}),
          tiny_moe_spec("qwen3_moe_sparse_step2", /*norm_topk=*/true, {}, 2)};
}

/// tiny_specs() followed by tiny_moe_specs(): what the CPU backend tests sweep.
inline std::vector<TinySpec> tiny_cpu_specs() {
  std::vector<TinySpec> v = tiny_specs();
  for (TinySpec& s : tiny_moe_specs()) v.push_back(std::move(s));
  return v;
}

}  // namespace hogwild::test
