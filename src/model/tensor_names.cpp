#include "model/tensor_names.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace hogwild {

namespace {

// Which configs have a tensor.
// Which configs (and layers) have a tensor. The MLP rows hold in dense layers only; a MoE layer's
// tensors are added by moe_specs.
enum class When { always, no_fused_qkv, fused_qkv, bias, qk_norm, no_fused_mlp, fused_mlp };

struct LayerRow {
  TensorKind kind;
  TensorRole role;
  When when;
  const char* suffix;  // after "model.layers.{i}."
};

// The per-layer rows, in the order HF checkpoints list them within a layer (alphabetical modules
// aside, this is the modeling_*.py order: input norm, attention, post norm, mlp).
constexpr LayerRow kLayerRows[] = {
    {TensorKind::input_layernorm, TensorRole::norm, When::always, "input_layernorm.weight"},
    {TensorKind::q_proj, TensorRole::matrix, When::no_fused_qkv, "self_attn.q_proj.weight"},
    {TensorKind::q_bias, TensorRole::bias, When::bias, "self_attn.q_proj.bias"},
    {TensorKind::k_proj, TensorRole::matrix, When::no_fused_qkv, "self_attn.k_proj.weight"},
    {TensorKind::k_bias, TensorRole::bias, When::bias, "self_attn.k_proj.bias"},
    {TensorKind::v_proj, TensorRole::matrix, When::no_fused_qkv, "self_attn.v_proj.weight"},
    {TensorKind::v_bias, TensorRole::bias, When::bias, "self_attn.v_proj.bias"},
    {TensorKind::qkv_proj, TensorRole::matrix, When::fused_qkv, "self_attn.qkv_proj.weight"},
    {TensorKind::q_norm, TensorRole::norm, When::qk_norm, "self_attn.q_norm.weight"},
    {TensorKind::k_norm, TensorRole::norm, When::qk_norm, "self_attn.k_norm.weight"},
    {TensorKind::o_proj, TensorRole::matrix, When::always, "self_attn.o_proj.weight"},
    {TensorKind::post_attention_layernorm, TensorRole::norm, When::always,
     "post_attention_layernorm.weight"},
    // MLP rows (dense layers only):
    {TensorKind::gate_proj, TensorRole::matrix, When::no_fused_mlp, "mlp.gate_proj.weight"},
    {TensorKind::up_proj, TensorRole::matrix, When::no_fused_mlp, "mlp.up_proj.weight"},
    {TensorKind::gate_up_proj, TensorRole::matrix, When::fused_mlp, "mlp.gate_up_proj.weight"},
    {TensorKind::down_proj, TensorRole::matrix, When::always, "mlp.down_proj.weight"},
};

bool has(const ModelConfig& c, When w) {
  switch (w) {
    case When::always:
      return true;
    case When::no_fused_qkv:
      return !c.fused_qkv;
    case When::fused_qkv:
      return c.fused_qkv;
    case When::bias:
      return c.attention_bias;
    case When::qk_norm:
      return c.qk_norm;
    case When::no_fused_mlp:
      return !c.fused_gate_up;
    case When::fused_mlp:
      return c.fused_gate_up;
  }
  return false;
}

bool is_mlp_row(TensorKind k) {
  return k == TensorKind::gate_proj || k == TensorKind::up_proj || k == TensorKind::gate_up_proj ||
         k == TensorKind::down_proj;
}

std::vector<int64_t> shape_of(const ModelConfig& c, TensorKind k) {
  const int64_t h = c.hidden_size, i = c.intermediate_size, d = c.head_dim;
  const int64_t e = c.num_experts, mi = c.moe_intermediate_size;
  const int64_t q = c.num_attention_heads * d, kv = c.num_key_value_heads * d;
  switch (k) {
    case TensorKind::embed_tokens:
    case TensorKind::lm_head:
      return {c.vocab_size, h};
    case TensorKind::norm:
    case TensorKind::input_layernorm:
    case TensorKind::post_attention_layernorm:
      return {h};
    case TensorKind::q_proj:
      return {q, h};
    case TensorKind::k_proj:
    case TensorKind::v_proj:
      return {kv, h};
    case TensorKind::qkv_proj:
      return {q + 2 * kv, h};
    case TensorKind::q_bias:
      return {q};
    case TensorKind::k_bias:
    case TensorKind::v_bias:
      return {kv};
    case TensorKind::q_norm:
    case TensorKind::k_norm:
      return {d};
    case TensorKind::o_proj:
      return {h, q};
    case TensorKind::gate_proj:
    case TensorKind::up_proj:
      return {i, h};
    case TensorKind::gate_up_proj:
      return {2 * i, h};
    case TensorKind::down_proj:
      return {h, i};
    case TensorKind::router:
      return {e, h};
    case TensorKind::expert_gate_proj:
    case TensorKind::expert_up_proj:
      return {mi, h};
    case TensorKind::expert_down_proj:
      return {h, mi};
    case TensorKind::experts_gate_up_proj:
      return {e, 2 * mi, h};
    case TensorKind::experts_down_proj:
      return {e, h, mi};
  }
  return {};
}

}  // namespace

std::vector<TensorSpec> model_tensor_specs(const ModelConfig& c, ExpertLayout experts) {
  std::vector<TensorSpec> out;
  auto add = [&](std::string name, TensorKind k, TensorRole r, int64_t layer, int64_t expert = -1) {
    out.push_back(TensorSpec{std::move(name), k, r, layer, expert, shape_of(c, k)});
  };
  add("model.embed_tokens.weight", TensorKind::embed_tokens, TensorRole::matrix, -1);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const bool moe = c.is_moe_layer(l);
    for (const LayerRow& r : kLayerRows)
      if (has(c, r.when) && !(moe && is_mlp_row(r.kind)))
        add(fmt::format("model.layers.{}.{}", l, r.suffix), r.kind, r.role, l);
    if (!moe) continue;
    // Qwen3MoeSparseMoeBlock: `gate` (the router), then `experts`.
    const std::string p = fmt::format("model.layers.{}.mlp.", l);
    add(p + "gate.weight", TensorKind::router, TensorRole::matrix, l);
    if (experts == ExpertLayout::fused) {
      add(p + "experts.gate_up_proj", TensorKind::experts_gate_up_proj, TensorRole::matrix, l);
      add(p + "experts.down_proj", TensorKind::experts_down_proj, TensorRole::matrix, l);
      continue;
    }
    for (int64_t e = 0; e < c.num_experts; ++e) {
      const std::string q = fmt::format("{}experts.{}.", p, e);
      add(q + "gate_proj.weight", TensorKind::expert_gate_proj, TensorRole::matrix, l, e);
      add(q + "up_proj.weight", TensorKind::expert_up_proj, TensorRole::matrix, l, e);
      add(q + "down_proj.weight", TensorKind::expert_down_proj, TensorRole::matrix, l, e);
    }
  }
  add("model.norm.weight", TensorKind::norm, TensorRole::norm, -1);
  if (!c.tie_word_embeddings) add("lm_head.weight", TensorKind::lm_head, TensorRole::matrix, -1);
  return out;
}

bool is_expert_tensor(TensorKind k) {
  return k == TensorKind::expert_gate_proj || k == TensorKind::expert_up_proj ||
         k == TensorKind::expert_down_proj || k == TensorKind::experts_gate_up_proj ||
         k == TensorKind::experts_down_proj;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

bool is_ignorable_tensor(const ModelConfig& c, const std::string& name) {
  const std::string inv = "rotary_emb.inv_freq";
  if (name.size() >= inv.size() && name.compare(name.size() - inv.size(), inv.size(), inv) == 0)
    return true;
  return c.tie_word_embeddings && name == "lm_head.weight";
}

}  // namespace hogwild
