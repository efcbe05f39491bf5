// config.json parsing. Defaults are those of transformers'
// configuration_{qwen2,qwen3,qwen3_moe,llama,mistral,phi3}.py for keys a config.json may omit;
// rope_scaling keys as in modeling_rope_utils.py.
#include "model/config.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io.h"

namespace hogwild {

namespace {

using nlohmann::json;

struct ArchRow {
  Arch arch;
  const char* hf_name;
  const char* short_name;
  const char* model_type;
};
constexpr ArchRow kArchs[] = {
    {Arch::qwen2, "Qwen2ForCausalLM", "qwen2", "qwen2"},
    {Arch::qwen3, "Qwen3ForCausalLM", "qwen3", "qwen3"},
    {Arch::llama, "LlamaForCausalLM", "llama", "llama"},
    {Arch::mistral, "MistralForCausalLM", "mistral", "mistral"},
    {Arch::phi3, "Phi3ForCausalLM", "phi3", "phi3"},
    {Arch::qwen3_moe, "Qwen3MoeForCausalLM", "qwen3_moe", "qwen3_moe"},
};

const ArchRow& row(Arch a) {
  for (const ArchRow& r : kArchs)
    if (r.arch == a) return r;
  HOGWILD_CHECK(false);
}

std::string supported_list(bool hf) {
  std::string s;
  for (const ArchRow& r : kArchs) {
    if (!s.empty()) s += ", ";
    s += hf ? r.hf_name : r.short_name;
  }
  return s;
}

bool present(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

int64_t get_int(const json& j, const char* key, int64_t def, bool required = false) {
  if (!present(j, key)) {
    if (required)
      fail(
          "config.json has no \"{}\"; it is required for this architecture — use the model's "
          "original config.json",
          key);
    return def;
  }
  const json& v = j[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
      std::fabs(v.get<double>()) < 9e15)
    return int64_t(v.get<double>());
  fail("config.json: \"{}\" must be an integer, got {}", key, v.dump());
}

double get_double(const json& j, const char* key, double def) {
  if (!present(j, key)) return def;
  const json& v = j[key];
  if (!v.is_number()) fail("config.json: \"{}\" must be a number, got {}", key, v.dump());
  return v.get<double>();
}

bool get_bool(const json& j, const char* key, bool def) {
  if (!present(j, key)) return def;
  const json& v = j[key];
  if (!v.is_boolean()) fail("config.json: \"{}\" must be true or false, got {}", key, v.dump());
  return v.get<bool>();
}

void require_positive(int64_t v, const char* key) {
  if (v <= 0) fail("config.json: \"{}\" must be positive, got {}", key, v);
}

// rope_scaling / rope_parameters (modeling_rope_utils.py: "type" is the legacy name of
// "rope_type").
RopeScaling parse_rope(const json& rs, const char* where) {
  RopeScaling r;
  if (!rs.is_object())
    fail("config.json: \"{}\" must be an object or null, got {}", where, rs.dump());
  std::string type = "default";
  if (present(rs, "rope_type"))
    type = rs["rope_type"].get<std::string>();
  else if (present(rs, "type"))
    type = rs["type"].get<std::string>();
  if (type != "default" && type != "linear" && type != "llama3" && type != "yarn")
    fail(
        "config.json: {} type \"{}\" is not supported; hogwild implements RoPE types default, "
        "linear, llama3 and yarn (longrope, dynamic and others are not) — remove it or use a "
        "model that does not need it",
        where, type);
  r.rope_type = type;
  if (type == "default") return r;
  if (!present(rs, "factor") || !rs["factor"].is_number())
    fail("config.json: {} of type {} needs a numeric \"factor\"", where, type);
  r.factor = rs["factor"].get<double>();
  if (!(r.factor >= 1.0) && type != "linear")
    fail("config.json: {}.factor must be >= 1, got {}", where, r.factor);
  if (!(r.factor > 0.0)) fail("config.json: {}.factor must be > 0, got {}", where, r.factor);
  r.original_max_position_embeddings = get_int(rs, "original_max_position_embeddings", 0);
  if (type == "llama3") {
    r.low_freq_factor = get_double(rs, "low_freq_factor", 1.0);
    r.high_freq_factor = get_double(rs, "high_freq_factor", 4.0);
    if (r.original_max_position_embeddings <= 0)
      fail("config.json: {} of type llama3 needs \"original_max_position_embeddings\"", where);
    if (!(r.high_freq_factor > r.low_freq_factor))
      fail("config.json: {}: high_freq_factor must exceed low_freq_factor", where);
  }
  if (type == "yarn") {
    r.beta_fast = get_double(rs, "beta_fast", 32.0);
    r.beta_slow = get_double(rs, "beta_slow", 1.0);
    r.attention_factor = get_double(rs, "attention_factor", 0.0);
    r.truncate = get_bool(rs, "truncate", true);
    if (present(rs, "mscale") || present(rs, "mscale_all_dim"))
      fail(
          "config.json: {}: yarn \"mscale\"/\"mscale_all_dim\" (DeepSeek-style) is not "
          "supported; remove them or use a model without them",
          where);
  }
  return r;
}

// The mixture-of-experts keys of Qwen3MoeConfig (configuration_qwen3_moe.py; defaults of its
// fields when absent: num_experts 128, num_experts_per_tok 8, moe_intermediate_size 768,
// norm_topk_prob false, decoder_sparse_step 1, mlp_only_layers []).
// transformers 5.x maps "num_experts" to "num_local_experts" (Qwen3MoeConfig.attribute_map) and
// save_pretrained writes the latter: either key is accepted, both only when they agree.
void parse_moe(const json& j, ModelConfig& c) {
  if (!present(j, "num_experts") && !present(j, "num_local_experts"))
    c.defaulted.push_back("num_experts = 128");
  for (const auto& [key, def] :
       {std::pair{"num_experts_per_tok", 8}, {"moe_intermediate_size", 768}})
    if (!present(j, key)) c.defaulted.push_back(fmt::format("{} = {}", key, def));
  c.num_experts = get_int(j, "num_local_experts", get_int(j, "num_experts", 128));
  if (present(j, "num_experts") && present(j, "num_local_experts") &&
      get_int(j, "num_experts", 0) != get_int(j, "num_local_experts", 0))
    fail("config.json: \"num_experts\" ({}) and \"num_local_experts\" ({}) disagree; keep one",
         get_int(j, "num_experts", 0), get_int(j, "num_local_experts", 0));
  c.num_experts_per_tok = get_int(j, "num_experts_per_tok", 8);
  c.moe_intermediate_size = get_int(j, "moe_intermediate_size", 768);
  c.norm_topk_prob = get_bool(j, "norm_topk_prob", false);
  c.decoder_sparse_step = get_int(j, "decoder_sparse_step", 1);
  if (present(j, "mlp_only_layers")) {
    const json& m = j["mlp_only_layers"];
    if (!m.is_array())
      fail("config.json: \"mlp_only_layers\" must be a list of layer indices, got {}", m.dump());
    for (const json& v : m) {
      if (!v.is_number_integer())
        fail("config.json: \"mlp_only_layers\" entries must be integers, got {}", v.dump());
      const int64_t l = v.get<int64_t>();
      if (l < 0 || l >= c.num_hidden_layers)
        fail(
            "config.json: \"mlp_only_layers\" holds layer {}, outside 0..{} (num_hidden_layers "
            "{})",
            l, c.num_hidden_layers - 1, c.num_hidden_layers);
      c.mlp_only_layers.push_back(l);
    }
  }
  if (c.num_experts < 0) fail("config.json: \"num_experts\" must be >= 0, got {}", c.num_experts);
  if (c.decoder_sparse_step <= 0)
    fail("config.json: \"decoder_sparse_step\" must be positive, got {}", c.decoder_sparse_step);
  if (c.num_moe_layers() == 0) return;  // every layer dense: the expert keys are unused
  require_positive(c.moe_intermediate_size, "moe_intermediate_size");
  if (c.num_experts_per_tok <= 0 || c.num_experts_per_tok > c.num_experts)
    fail(
        "config.json: \"num_experts_per_tok\" ({}) must be between 1 and \"num_experts\" ({}): "
        "each token is routed to that many distinct experts",
        c.num_experts_per_tok, c.num_experts);
}

json rope_to_json(const RopeScaling& r) {
  if (r.rope_type == "default") return nullptr;
  json j = {{"rope_type", r.rope_type}, {"factor", r.factor}};
  if (r.rope_type == "llama3") {
    j["low_freq_factor"] = r.low_freq_factor;
    j["high_freq_factor"] = r.high_freq_factor;
  }
  if (r.original_max_position_embeddings > 0)
    j["original_max_position_embeddings"] = r.original_max_position_embeddings;
  if (r.rope_type == "yarn") {
    j["beta_fast"] = r.beta_fast;
    j["beta_slow"] = r.beta_slow;
    if (r.attention_factor != 0.0) j["attention_factor"] = r.attention_factor;
    if (!r.truncate) j["truncate"] = false;
  }
  return j;
}

}  // namespace

const char* arch_hf_name(Arch a) { return row(a).hf_name; }
const char* arch_short_name(Arch a) { return row(a).short_name; }

Arch arch_from_hf_name(const std::string& name) {
  for (const ArchRow& r : kArchs)
    if (name == r.hf_name) return r.arch;
  fail("architecture \"{}\" is not supported; supported architectures: {}", name,
       supported_list(true));
}

Arch arch_from_short_name(const std::string& name) {
  for (const ArchRow& r : kArchs)
    if (name == r.short_name) return r.arch;
  fail("unknown architecture \"{}\"; use one of: {}", name, supported_list(false));
}

bool ModelConfig::is_moe_layer(int64_t layer) const {
  // Qwen3MoeDecoderLayer.__init__ (modeling_qwen3_moe.py): a sparse block unless the layer is in
  // mlp_only_layers, when num_experts > 0 and (layer_idx + 1) % decoder_sparse_step == 0.
  if (num_experts <= 0 || decoder_sparse_step <= 0 || layer < 0 || layer >= num_hidden_layers)
    return false;
  for (int64_t l : mlp_only_layers)
    if (l == layer) return false;
  return (layer + 1) % decoder_sparse_step == 0;
}

int64_t ModelConfig::num_moe_layers() const {
  int64_t n = 0;
  for (int64_t l = 0; l < num_hidden_layers; ++l) n += is_moe_layer(l) ? 1 : 0;
  return n;
}

int64_t ModelConfig::rotary_dim() const {
  return int64_t(double(head_dim) * partial_rotary_factor);
}

int64_t ModelConfig::num_parameters() const {
  const int64_t h = hidden_size, d = head_dim, q = num_attention_heads * d,
                kv = num_key_value_heads * d;
  int64_t layer = 2 * h                          // input_layernorm, post_attention_layernorm
                  + q * h + 2 * kv * h + h * q;  // q, k, v, o projections
  if (attention_bias) layer += q + 2 * kv;
  if (qk_norm) layer += 2 * d;
  const int64_t moe_layers = num_moe_layers();
  const int64_t dense_mlp = 3 * h * intermediate_size;                    // gate, up, down
  const int64_t moe_mlp = num_experts * h                                 // router (mlp.gate)
                          + num_experts * 3 * h * moe_intermediate_size;  // the experts
  int64_t n = vocab_size * h + num_hidden_layers * layer + h +
              (num_hidden_layers - moe_layers) * dense_mlp + moe_layers * moe_mlp;
  if (!tie_word_embeddings) n += vocab_size * h;
  return n;
}

int64_t ModelConfig::num_active_parameters() const {
  return num_parameters() - num_moe_layers() * (num_experts - num_experts_per_tok) * 3 *
                                hidden_size * moe_intermediate_size;
}

int64_t ModelConfig::kv_bytes_per_token(int64_t elem_bytes) const {
  return 2 * num_hidden_layers * num_key_value_heads * head_dim * elem_bytes;
}

namespace {

// RoPE: newer transformers put rope_theta and the scaling into "rope_parameters".
void parse_rotary(const json& j, ModelConfig& c) {
  c.partial_rotary_factor = get_double(j, "partial_rotary_factor", 1.0);
  c.rope_theta = get_double(j, "rope_theta", 10000.0);
  if (present(j, "rope_parameters")) {
    const json& rp = j["rope_parameters"];
    c.rope_scaling = parse_rope(rp, "rope_parameters");
    c.rope_theta = get_double(rp, "rope_theta", c.rope_theta);
    c.partial_rotary_factor = get_double(rp, "partial_rotary_factor", c.partial_rotary_factor);
  } else if (present(j, "rope_scaling")) {
    c.rope_scaling = parse_rope(j["rope_scaling"], "rope_scaling");
  }
  if (!(c.rope_theta > 0)) fail("config.json: rope_theta must be positive");
  if (!(c.partial_rotary_factor > 0 && c.partial_rotary_factor <= 1))
    fail("config.json: partial_rotary_factor must be in (0, 1], got {}", c.partial_rotary_factor);
  if (c.rotary_dim() <= 0 || c.rotary_dim() % 2 != 0)
    fail(
        "config.json: rotary dimensions head_dim*partial_rotary_factor = {} must be even and "
        "positive",
        c.rotary_dim());
}

// Family quirks: biases, q/k norms, fused tensors, sliding windows, the activation.
void parse_quirks(const json& j, ModelConfig& c) {
  const Arch a = c.arch;
  // Qwen2Attention: q/k/v always have a bias (o_proj none). Llama/Qwen3 `attention_bias: true`
  // would also put a bias on o_proj, which no released checkpoint has and ModelWeights lacks.
  c.attention_bias = a == Arch::qwen2;
  if ((a == Arch::qwen3 || a == Arch::qwen3_moe || a == Arch::llama) &&
      get_bool(j, "attention_bias", false))
    fail(
        "config.json: \"attention_bias\": true is not supported for {} (it adds biases to q/k/v "
        "and o_proj; released checkpoints use false)",
        arch_hf_name(a));
  c.qk_norm = a == Arch::qwen3 || a == Arch::qwen3_moe;
  c.fused_qkv = c.fused_gate_up = a == Arch::phi3;
  if (a == Arch::llama && get_bool(j, "mlp_bias", false))
    fail("config.json: \"mlp_bias\": true is not supported; use a Llama model without MLP biases");
  if ((a == Arch::qwen2 || a == Arch::qwen3 || a == Arch::qwen3_moe) &&
      get_bool(j, "use_sliding_window", false))
    fail(
        "config.json: \"use_sliding_window\": true is not supported; set it to false (the "
        "released Qwen models do) or use another model");
  if (a == Arch::mistral || a == Arch::phi3) c.sliding_window = get_int(j, "sliding_window", 0);
  if (present(j, "hidden_act") && j["hidden_act"] != "silu")
    fail("config.json: hidden_act {} is not supported; hogwild implements SwiGLU with silu",
         j["hidden_act"].dump());
}

ModelConfig parse_model_config_impl(const json& j) {
  if (!j.is_object())
    fail("config.json is not a JSON object; use the model's original config.json");
  if (!present(j, "architectures") || !j["architectures"].is_array() ||
      j["architectures"].empty() || !j["architectures"][0].is_string())
    fail(
        "config.json has no \"architectures\" list; add e.g. \"architectures\": "
        "[\"Qwen3ForCausalLM\"] (supported: {})",
        supported_list(true));
  ModelConfig c;
  c.arch = arch_from_hf_name(j["architectures"][0].get<std::string>());
  const Arch a = c.arch;

  c.hidden_size = get_int(j, "hidden_size", 0, true);
  c.intermediate_size = get_int(j, "intermediate_size", 0, true);
  c.num_hidden_layers = get_int(j, "num_hidden_layers", 0, true);
  c.num_attention_heads = get_int(j, "num_attention_heads", 0, true);
  c.vocab_size = get_int(j, "vocab_size", 0, true);
  for (auto [v, k] : {std::pair{c.hidden_size, "hidden_size"},
                      {c.intermediate_size, "intermediate_size"},
                      {c.num_hidden_layers, "num_hidden_layers"},
                      {c.num_attention_heads, "num_attention_heads"},
                      {c.vocab_size, "vocab_size"}})
    require_positive(v, k);
  c.num_key_value_heads = get_int(j, "num_key_value_heads", c.num_attention_heads);
  require_positive(c.num_key_value_heads, "num_key_value_heads");
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    fail("config.json: num_attention_heads ({}) must be a multiple of num_key_value_heads ({})",
         c.num_attention_heads, c.num_key_value_heads);

  // head_dim: Qwen3Config defaults to 128; the others use getattr(config, "head_dim",
  // hidden_size // num_attention_heads) (Mistral configs may carry "head_dim": null).
  if (present(j, "head_dim")) {
    c.head_dim = get_int(j, "head_dim", 0);
  } else if (a == Arch::qwen3) {
    c.head_dim = 128;  // Qwen3Config's default; Qwen3MoeConfig has none (getattr fallback below)
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      fail(
          "config.json: hidden_size ({}) is not a multiple of num_attention_heads ({}) and no "
          "\"head_dim\" is given",
          c.hidden_size, c.num_attention_heads);
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  require_positive(c.head_dim, "head_dim");

  const int64_t def_max_pos = a == Arch::llama     ? 2048
                              : a == Arch::mistral ? 4096 * 32
                              : a == Arch::phi3    ? 4096
                                                   : 32768;
  c.max_position_embeddings = get_int(j, "max_position_embeddings", def_max_pos);
  require_positive(c.max_position_embeddings, "max_position_embeddings");
  c.rms_norm_eps = get_double(j, "rms_norm_eps", a == Arch::phi3 ? 1e-5 : 1e-6);
  if (!(c.rms_norm_eps > 0)) fail("config.json: rms_norm_eps must be positive");
  c.tie_word_embeddings = get_bool(j, "tie_word_embeddings", false);
  parse_rotary(j, c);
  parse_quirks(j, c);
  if (a == Arch::qwen3_moe) parse_moe(j, c);

  c.torch_dtype = present(j, "torch_dtype") ? j["torch_dtype"].get<std::string>()
                  : present(j, "dtype")     ? j["dtype"].get<std::string>()
                                            : "bfloat16";
  c.quantization_config = parse_quant_config(j);  // model/quant.h; none when absent
  c.bos_token_id = get_int(j, "bos_token_id", -1);
  if (present(j, "eos_token_id")) {
    const json& e = j["eos_token_id"];
    if (e.is_array()) {
      for (const json& v : e) {
        if (!v.is_number_integer()) fail("config.json: eos_token_id entries must be integers");
        c.eos_token_id.push_back(v.get<int64_t>());
      }
    } else {
      c.eos_token_id.push_back(get_int(j, "eos_token_id", -1));
    }
  }
  return c;
}
}  // namespace

ModelConfig parse_model_config(const json& j) {
  try {
    return parse_model_config_impl(j);
  } catch (const json::exception& e) {  // a key of an unexpected type
    fail("config.json: {}; use the model's original config.json", e.what());
  }
}

void require_model_dir(const std::string& model_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(model_dir, ec))
    fail(
        "model directory {} does not exist or is not a directory; pass a Hugging Face model "
        "directory (config.json + *.safetensors)",
        model_dir);
}

ModelConfig load_model_config(const std::string& model_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  require_model_dir(model_dir);
  fs::path p = fs::path(model_dir) / "config.json";
  if (!fs::exists(p, ec))
    fail("{} is missing; a Hugging Face model directory needs its config.json", p.string());
  const std::string text = read_file(p, "config.json");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail("{} is not valid JSON ({}); download it again", p.string(), e.what());
  }
  try {
    return parse_model_config(j);
  } catch (const Error& e) {
    fail("{}: {}", p.string(), e.what());
  }
}

json model_config_to_json(const ModelConfig& c) {
  const Arch a = c.arch;
  json j;
  j["architectures"] = {arch_hf_name(a)};
  j["model_type"] = row(a).model_type;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  if (a == Arch::qwen3 || a == Arch::qwen3_moe || a == Arch::llama || a == Arch::mistral ||
      c.head_dim * c.num_attention_heads != c.hidden_size)
    j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = rope_to_json(c.rope_scaling);
  if (c.partial_rotary_factor != 1.0 || a == Arch::phi3)
    j["partial_rotary_factor"] = c.partial_rotary_factor;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  if (a == Arch::qwen3 || a == Arch::qwen3_moe || a == Arch::llama)
    j["attention_bias"] = c.attention_bias;
  if (a == Arch::llama) j["mlp_bias"] = false;
  if (a == Arch::qwen2 || a == Arch::qwen3 || a == Arch::qwen3_moe) j["use_sliding_window"] = false;
  if (a == Arch::qwen3_moe) {
    j["sliding_window"] = nullptr;  // Qwen3MoeConfig's default is 4096 (unused without the flag)
    j["num_experts"] = c.num_experts;
    j["num_experts_per_tok"] = c.num_experts_per_tok;
    j["moe_intermediate_size"] = c.moe_intermediate_size;
    j["norm_topk_prob"] = c.norm_topk_prob;
    j["decoder_sparse_step"] = c.decoder_sparse_step;
    j["mlp_only_layers"] = c.mlp_only_layers;
    j["output_router_logits"] = false;
    j["router_aux_loss_coef"] = 0.001;
  }
  if (a == Arch::mistral || a == Arch::phi3)
    j["sliding_window"] = c.sliding_window > 0 ? json(c.sliding_window) : json(nullptr);
  j["hidden_act"] = "silu";
  j["attention_dropout"] = 0.0;
  j["torch_dtype"] = c.torch_dtype;
  j["bos_token_id"] = c.bos_token_id >= 0 ? json(c.bos_token_id) : json(nullptr);
  if (c.eos_token_id.empty())
    j["eos_token_id"] = nullptr;
  else if (c.eos_token_id.size() == 1)
    j["eos_token_id"] = c.eos_token_id[0];
  else
    j["eos_token_id"] = c.eos_token_id;
  j["pad_token_id"] = nullptr;  // Phi3Config defaults to 32000, out of range for small vocabularies
  j["use_cache"] = true;
  if (c.quantization_config.method != QuantMethod::none)
    j["quantization_config"] = quant_config_to_json(c.quantization_config);
  return j;
}

}  // namespace hogwild
