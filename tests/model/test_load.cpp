// load_model on make-model output: every field has its table shape and holds exactly the values
// make-model wrote (fp32 files: bit-exact; bf16: the bf16 rounding), Phi3 fused tensors split into
// the right rows, tied embeddings, sharded == single file, and the mismatch errors.
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "model/make_model.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "tests/model/test_util.h"

namespace hogwild {
namespace {

using test::expect_error;
using test::TempDir;

constexpr uint64_t kSeed = 7;

ModelConfig make(const TempDir& d, Arch a, Dtype dt = Dtype::f32, uint64_t shard = 2ull << 30,
                 const std::string& preset = "tiny") {
  MakeModelOptions o;
  o.arch = a;
  o.preset = preset;
  o.seed = kSeed;
  o.dtype = dt;
  o.out_dir = d.str();
  o.max_shard_size = shard;
  o.show_progress = false;
  return make_model(o);
}

std::vector<float> expected(const std::string& name, uint64_t first, size_t n, double mean,
                            double stdev) {
  std::vector<float> v(n);
  random_tensor_values(kSeed, name, first, n, mean, stdev, v.data());
  return v;
}

const Arch kArchs[] = {Arch::qwen2, Arch::qwen3, Arch::llama, Arch::mistral, Arch::phi3};

TEST(LoadModel, EveryArchLoadsTheValuesMakeModelWrote) {
  for (Arch a : kArchs) {
    SCOPED_TRACE(arch_short_name(a));
    TempDir d;
    ModelConfig made = make(d, a);
    ModelWeights w = load_model(d.str(), {.show_progress = false});
    const ModelConfig& c = w.config;
    EXPECT_EQ(c.arch, a);
    EXPECT_EQ(c.hidden_size, made.hidden_size);
    EXPECT_EQ(c.head_dim, made.head_dim);
    EXPECT_EQ(c.torch_dtype, "float32");
    const size_t h = 64, q = size_t(c.num_attention_heads * c.head_dim),
                 kv = size_t(c.num_key_value_heads * c.head_dim), in = size_t(c.intermediate_size);
    EXPECT_EQ(w.embed_tokens, expected("model.embed_tokens.weight", 0, 512 * h, 0, 0.1));
    EXPECT_EQ(w.norm, expected("model.norm.weight", 0, h, 1, 0.1));
    ASSERT_EQ(w.layers.size(), 2u);
    for (int l = 0; l < 2; ++l) {
      const LayerWeights& L = w.layers[size_t(l)];
      const std::string p = "model.layers." + std::to_string(l) + ".";
      EXPECT_EQ(L.input_layernorm, expected(p + "input_layernorm.weight", 0, h, 1, 0.1));
      EXPECT_EQ(L.post_attention_layernorm,
                expected(p + "post_attention_layernorm.weight", 0, h, 1, 0.1));
      EXPECT_EQ(L.o_proj, expected(p + "self_attn.o_proj.weight", 0, h * q, 0, 0.1));
      EXPECT_EQ(L.down_proj, expected(p + "mlp.down_proj.weight", 0, h * in, 0, 0.1));
      if (a == Arch::phi3) {
        // qkv_proj rows: q (q rows), k (kv rows), v (kv rows); gate_up_proj rows: gate, up.
        const std::string qkv = p + "self_attn.qkv_proj.weight", gu = p + "mlp.gate_up_proj.weight";
        EXPECT_EQ(L.q_proj, expected(qkv, 0, q * h, 0, 0.1));
        EXPECT_EQ(L.k_proj, expected(qkv, q * h, kv * h, 0, 0.1));
        EXPECT_EQ(L.v_proj, expected(qkv, (q + kv) * h, kv * h, 0, 0.1));
        EXPECT_EQ(L.gate_proj, expected(gu, 0, in * h, 0, 0.1));
        EXPECT_EQ(L.up_proj, expected(gu, in * h, in * h, 0, 0.1));
      } else {
        EXPECT_EQ(L.q_proj, expected(p + "self_attn.q_proj.weight", 0, q * h, 0, 0.1));
        EXPECT_EQ(L.k_proj, expected(p + "self_attn.k_proj.weight", 0, kv * h, 0, 0.1));
        EXPECT_EQ(L.v_proj, expected(p + "self_attn.v_proj.weight", 0, kv * h, 0, 0.1));
        EXPECT_EQ(L.gate_proj, expected(p + "mlp.gate_proj.weight", 0, in * h, 0, 0.1));
        EXPECT_EQ(L.up_proj, expected(p + "mlp.up_proj.weight", 0, in * h, 0, 0.1));
      }
      if (a == Arch::qwen2) {
        EXPECT_EQ(L.q_bias, expected(p + "self_attn.q_proj.bias", 0, q, 0, 0.1));
        EXPECT_EQ(L.k_bias, expected(p + "self_attn.k_proj.bias", 0, kv, 0, 0.1));
        EXPECT_EQ(L.v_bias, expected(p + "self_attn.v_proj.bias", 0, kv, 0, 0.1));
      } else {
        EXPECT_TRUE(L.q_bias.empty() && L.k_bias.empty() && L.v_bias.empty());
      }
      if (a == Arch::qwen3) {
        EXPECT_EQ(L.q_norm, expected(p + "self_attn.q_norm.weight", 0, 32, 1, 0.1));
        EXPECT_EQ(L.k_norm, expected(p + "self_attn.k_norm.weight", 0, 32, 1, 0.1));
      } else {
        EXPECT_TRUE(L.q_norm.empty() && L.k_norm.empty());
      }
    }
    if (a == Arch::qwen3) {  // tie_word_embeddings: no lm_head.weight in the file
      EXPECT_TRUE(c.tie_word_embeddings);
      EXPECT_TRUE(w.lm_head.empty());
      EXPECT_EQ(&w.output_weight(), &w.embed_tokens);
    } else {
      EXPECT_EQ(w.lm_head, expected("lm_head.weight", 0, 512 * h, 0, 0.1));
      EXPECT_EQ(&w.output_weight(), &w.lm_head);
    }
  }
}

// Rewrites DIR/config.json with one key changed.
void patch_config(const TempDir& d, const std::string& key, const nlohmann::json& v) {
  auto j = nlohmann::json::parse(test::read_file(d / "config.json"));
  j[key] = v;
  test::write_file(d / "config.json", j.dump());
}

TEST(LoadModel, Qwen3MoeRouterAndExpertsHoldTheValuesMakeModelWrote) {
  for (const char* preset : {"tiny", "tiny-dense-layers"}) {
    SCOPED_TRACE(preset);
    TempDir d;
    make(d, Arch::qwen3_moe, Dtype::f32, 2ull << 30, preset);
    ModelWeights w = load_model(d.str(), {.show_progress = false});
    const ModelConfig& c = w.config;
    ASSERT_EQ(c.num_experts, 8);
    const size_t h = 64, mi = 32, in = 128;
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      const LayerWeights& L = w.layers[size_t(l)];
      const std::string p = "model.layers." + std::to_string(l) + ".mlp.";
      if (!c.is_moe_layer(l)) {  // dense: intermediate_size 128, no router or experts
        EXPECT_EQ(L.gate_proj, expected(p + "gate_proj.weight", 0, in * h, 0, 0.1));
        EXPECT_EQ(L.down_proj, expected(p + "down_proj.weight", 0, h * in, 0, 0.1));
        EXPECT_TRUE(L.router.empty() && L.experts.empty());
        continue;
      }
      EXPECT_TRUE(L.gate_proj.empty() && L.up_proj.empty() && L.down_proj.empty());
      EXPECT_EQ(L.router, expected(p + "gate.weight", 0, 8 * h, 0, 0.1));
      ASSERT_EQ(L.experts.size(), 8u);
      for (size_t e = 0; e < 8; ++e) {
        const std::string q = p + "experts." + std::to_string(e) + ".";
        EXPECT_EQ(L.experts[e].gate_proj, expected(q + "gate_proj.weight", 0, mi * h, 0, 0.1));
        EXPECT_EQ(L.experts[e].up_proj, expected(q + "up_proj.weight", 0, mi * h, 0, 0.1));
        EXPECT_EQ(L.experts[e].down_proj, expected(q + "down_proj.weight", 0, h * mi, 0, 0.1));
      }
    }
    if (std::string(preset) == "tiny-dense-layers") {  // layers 1 and 5 sparse of 6
      EXPECT_EQ(c.num_moe_layers(), 2);
      EXPECT_TRUE(c.is_moe_layer(1) && c.is_moe_layer(5) && !c.is_moe_layer(3));
    }
  }
}

// Rewrites the per-expert Qwen3-MoE checkpoint of `from` into `to` in transformers 5.x's fused
// form (conversion_mapping.py "qwen2_moe": per layer mlp.experts.gate_up_proj [E, 2I, H] = for
// each expert its gate rows then its up rows, mlp.experts.down_proj [E, H, I]), f32.
void write_fused_experts(const TempDir& from, const TempDir& to, const ModelConfig& c) {
  Checkpoint ck(from.str());
  std::vector<TensorToWrite> tw;
  std::vector<std::vector<float>> data;
  auto f32 = [&](const std::string& name) {
    const Checkpoint::Entry* e = ck.find(name);
    const float* p = reinterpret_cast<const float*>(e->file->data(*e->info));
    return std::vector<float>(p, p + e->info->numel());
  };
  for (const auto& [name, e] : ck.tensors()) {
    if (name.find(".mlp.experts.") != std::string::npos) continue;
    tw.push_back({name, Dtype::f32, e.info->shape});
    data.push_back(f32(name));
  }
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    if (!c.is_moe_layer(l)) continue;
    const std::string p = "model.layers." + std::to_string(l) + ".mlp.experts.";
    std::vector<float> gu, down;
    for (int64_t e = 0; e < c.num_experts; ++e) {
      const std::string q = p + std::to_string(e) + ".";
      for (const char* part : {"gate_proj.weight", "up_proj.weight"}) {
        std::vector<float> v = f32(q + part);
        gu.insert(gu.end(), v.begin(), v.end());
      }
      std::vector<float> v = f32(q + "down_proj.weight");
      down.insert(down.end(), v.begin(), v.end());
    }
    const int64_t E = c.num_experts, H = c.hidden_size, I = c.moe_intermediate_size;
    tw.push_back({p + "gate_up_proj", Dtype::f32, {E, 2 * I, H}});
    data.push_back(gu);
    tw.push_back({p + "down_proj", Dtype::f32, {E, H, I}});
    data.push_back(down);
  }
  std::filesystem::copy_file(from / "config.json", to / "config.json");
  write_safetensors(to / "model.safetensors", tw, {{"format", "pt"}},
                    [&](size_t i, std::vector<uint8_t>& out) {
                      out.resize(data[i].size() * 4);
                      std::memcpy(out.data(), data[i].data(), out.size());
                    });
}

TEST(LoadModel, Qwen3MoeFusedExpertsEqualPerExpert) {
  TempDir per, fused;
  const ModelConfig c = make(per, Arch::qwen3_moe, Dtype::f32, 2ull << 30, "tiny-dense-layers");
  write_fused_experts(per, fused, c);
  ModelWeights a = load_model(per.str(), {.show_progress = false});
  ModelWeights b = load_model(fused.str(), {.show_progress = false});
  for (size_t l = 0; l < a.layers.size(); ++l) {
    EXPECT_EQ(a.layers[l].router, b.layers[l].router) << l;
    EXPECT_EQ(a.layers[l].gate_proj, b.layers[l].gate_proj) << l;
    ASSERT_EQ(a.layers[l].experts.size(), b.layers[l].experts.size()) << l;
    for (size_t e = 0; e < a.layers[l].experts.size(); ++e) {
      EXPECT_EQ(a.layers[l].experts[e].gate_proj, b.layers[l].experts[e].gate_proj)
          << l << " " << e;
      EXPECT_EQ(a.layers[l].experts[e].up_proj, b.layers[l].experts[e].up_proj) << l << " " << e;
      EXPECT_EQ(a.layers[l].experts[e].down_proj, b.layers[l].experts[e].down_proj)
          << l << " " << e;
    }
  }
  // A fused tensor of the wrong shape is named with both shapes.
  patch_config(fused, "moe_intermediate_size", 16);
  expect_error([&] { load_model(fused.str(), {.show_progress = false}); },
               {"tensor model.layers.1.mlp.experts.gate_up_proj: expected shape [8, 32, 64], got "
                "[8, 64, 64]"});
}

TEST(LoadModel, Qwen3MoeMismatchesAreNamed) {
  TempDir d;
  make(d, Arch::qwen3_moe, Dtype::bf16);
  patch_config(d, "num_experts", 7);  // expert 7 is unexpected, the router has 8 rows
  expect_error([&] { load_model(d.str(), {.show_progress = false}); },
               {"tensor model.layers.0.mlp.gate.weight: expected shape [7, 64], got [8, 64]",
                "unexpected tensor(s): model.layers.0.mlp.experts.7."});
  TempDir e;
  make(e, Arch::qwen3_moe, Dtype::bf16);
  patch_config(e, "mlp_only_layers", nlohmann::json::array({1}));  // layer 1 dense: no dense MLP
  expect_error([&] { load_model(e.str(), {.show_progress = false}); },
               {"missing tensor(s): model.layers.1.mlp.gate_proj.weight",
                "unexpected tensor(s): model.layers.1.mlp.experts.0."});
  TempDir f;
  make(f, Arch::qwen3_moe, Dtype::bf16);
  patch_config(f, "moe_intermediate_size", 48);
  expect_error(
      [&] { load_model(f.str(), {.show_progress = false}); },
      {"tensor model.layers.0.mlp.experts.0.gate_proj.weight: expected shape [48, 64], got [32, "
       "64]"});
  // A size absent from config.json takes the reference default (Qwen3MoeConfig: 768); the error
  // says so, and lists the first mismatches only.
  TempDir g;
  make(g, Arch::qwen3_moe, Dtype::bf16);
  patch_config(g, "moe_intermediate_size", nullptr);
  expect_error([&] { load_model(g.str(), {.show_progress = false}); },
               {"expected shape [768, 64], got [32, 64]", "; ... and ",
                "config.json does not give moe_intermediate_size = 768, so the default was used"});
}

TEST(LoadModel, Bf16AndF16AreRoundedCopiesOfTheFp32Values) {
  for (Dtype dt : {Dtype::bf16, Dtype::f16}) {
    TempDir d;
    make(d, Arch::llama, dt);
    ModelWeights w = load_model(d.str(), {.show_progress = false});
    std::vector<float> ref = expected("model.layers.1.mlp.up_proj.weight", 0, 128 * 64, 0, 0.1);
    ASSERT_EQ(w.layers[1].up_proj.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      float r =
          dt == Dtype::bf16 ? bf16_to_f32(f32_to_bf16(ref[i])) : f16_to_f32(f32_to_f16(ref[i]));
      ASSERT_EQ(w.layers[1].up_proj[i], r) << i;
    }
  }
}

TEST(LoadModel, ShardedEqualsSingleFile) {
  for (Arch a : {Arch::qwen2, Arch::phi3}) {
    TempDir one, many;
    make(one, a, Dtype::bf16);
    make(many, a, Dtype::bf16, 40000);  // ~7 shards for the ~300 KB tiny model
    EXPECT_FALSE(std::filesystem::exists(one / "model.safetensors.index.json"));
    ASSERT_TRUE(std::filesystem::exists(many / "model.safetensors.index.json"));
    ASSERT_FALSE(std::filesystem::exists(many / "model.safetensors"));
    Checkpoint ck(many.str());
    EXPECT_TRUE(ck.sharded());
    EXPECT_GE(ck.files().size(), 5u);
    ModelWeights w1 = load_model(one.str(), {.show_progress = false});
    ModelWeights w2 = load_model(many.str(), {.show_progress = false});
    EXPECT_EQ(w1.embed_tokens, w2.embed_tokens);
    EXPECT_EQ(w1.lm_head, w2.lm_head);
    EXPECT_EQ(w1.norm, w2.norm);
    for (size_t l = 0; l < w1.layers.size(); ++l) {
      EXPECT_EQ(w1.layers[l].q_proj, w2.layers[l].q_proj);
      EXPECT_EQ(w1.layers[l].v_proj, w2.layers[l].v_proj);
      EXPECT_EQ(w1.layers[l].q_bias, w2.layers[l].q_bias);
      EXPECT_EQ(w1.layers[l].up_proj, w2.layers[l].up_proj);
      EXPECT_EQ(w1.layers[l].down_proj, w2.layers[l].down_proj);
    }
  }
}

TEST(LoadModel, WrongShapeNamesTensorExpectedAndActual) {
  TempDir d;
  make(d, Arch::qwen3, Dtype::bf16);
  patch_config(d, "intermediate_size", 96);
  expect_error(
      [&] { load_model(d.str(), {.show_progress = false}); },
      {"tensor model.layers.0.mlp.gate_proj.weight: expected shape [96, 64], got [128, 64]",
       "tensor model.layers.1.mlp.down_proj.weight: expected shape [64, 96], got [64, 128]",
       "same model"});
}

TEST(LoadModel, MissingAndUnexpectedTensorsAreListed) {
  TempDir d;
  make(d, Arch::llama, Dtype::bf16);
  patch_config(d, "num_hidden_layers", 3);  // layer 2 is missing
  expect_error([&] { load_model(d.str(), {.show_progress = false}); },
               {"missing tensor(s): model.layers.2.input_layernorm.weight"});
  TempDir e;
  make(e, Arch::llama, Dtype::bf16);
  patch_config(e, "num_hidden_layers", 1);  // layer 1 is unexpected
  expect_error([&] { load_model(e.str(), {.show_progress = false}); },
               {"unexpected tensor(s): model.layers.1."});
  TempDir f;
  make(f, Arch::qwen2, Dtype::bf16);
  patch_config(f, "tie_word_embeddings", true);  // lm_head.weight present but ignored when tied
  ModelWeights w = load_model(f.str(), {.show_progress = false});
  EXPECT_TRUE(w.lm_head.empty());
  TempDir g;
  make(g, Arch::qwen3, Dtype::bf16);
  patch_config(g, "tie_word_embeddings", false);  // lm_head.weight needed but absent
  expect_error([&] { load_model(g.str(), {.show_progress = false}); },
               {"1 missing tensor(s): lm_head.weight"});
}

TEST(LoadModel, MissingDirectoryConfigAndWeights) {
  expect_error([] { load_model("/nonexistent/hogwild-model", {.show_progress = false}); },
               {"/nonexistent/hogwild-model", "does not exist"});
  TempDir d;
  expect_error([&] { load_model(d.str(), {.show_progress = false}); }, {"config.json is missing"});
  make(d, Arch::qwen3, Dtype::bf16);
  std::filesystem::remove(d / "model.safetensors");
  expect_error([&] { load_model(d.str(), {.show_progress = false}); },
               {"no model.safetensors or model.safetensors.index.json"});
}

TEST(LoadModel, MissingShardAndStaleIndex) {
  TempDir d;
  make(d, Arch::mistral, Dtype::bf16, 60000);
  std::filesystem::remove(d / "model-00002-of-00006.safetensors");
  expect_error([&] { load_model(d.str(), {.show_progress = false}); },
               {"model-00002-of-00006.safetensors", "is missing", "download all 6 shards"});
  TempDir e;
  make(e, Arch::mistral, Dtype::bf16, 60000);
  auto j = nlohmann::json::parse(test::read_file(e / "model.safetensors.index.json"));
  j["weight_map"]["model.norm.weight"] = "model-00001-of-00006.safetensors";
  test::write_file(e / "model.safetensors.index.json", j.dump());
  expect_error([&] { load_model(e.str(), {.show_progress = false}); },
               {"model-00001-of-00006.safetensors", "model.norm.weight",
                "listed in model.safetensors.index.json but not in the shard"});
}

// A shard error names only shards that exist: the index sends a tensor of shard S to a later
// shard that is not there (it was reported as "tensor X is in S and <missing shard>"), or to
// another real shard.
TEST(LoadModel, ShardErrorsNameRealShards) {
  TempDir d;
  make(d, Arch::mistral, Dtype::bf16, 60000);
  const std::string index = d / "model.safetensors.index.json";
  auto j = nlohmann::json::parse(test::read_file(index));
  std::map<std::string, std::vector<std::string>> by_shard;
  for (const auto& [name, f] : j["weight_map"].items()) by_shard[f].push_back(name);
  std::string shard, tensor, later;  // a shard holding several tensors, and a later shard
  for (const auto& [f, names] : by_shard)
    if (shard.empty() && names.size() > 1) {
      shard = f;
      tensor = names[0];
    } else if (!shard.empty() && later.empty()) {
      later = f;
    }
  ASSERT_FALSE(later.empty());
  j["weight_map"][tensor] = "model-00009-of-00006.safetensors";
  test::write_file(index, j.dump());
  expect_error([&] { load_model(d.str(), {.show_progress = false}); },
               {"shard " + d.str() + "/model-00009-of-00006.safetensors listed in", "is missing"});
  j["weight_map"][tensor] = later;
  test::write_file(index, j.dump());
  expect_error([&] { load_model(d.str(), {.show_progress = false}); },
               {d.str() + "/" + shard + ": holds tensor '" + tensor +
                "', which model.safetensors.index.json maps to " + later});
}

// A directory where a file is expected says so (it was reported as "not valid JSON").
TEST(LoadModel, DirectoryWhereAFileIsExpected) {
  TempDir d;
  make(d, Arch::qwen3, Dtype::bf16);
  std::filesystem::remove(d / "config.json");
  std::filesystem::create_directories(d / "config.json");
  expect_error([&] { load_model(d.str(), {.show_progress = false}); },
               {"config.json '" + d.str() + "/config.json' is a directory, not a file"});
}

TEST(LoadModel, UnsupportedArchitectureListsSupported) {
  TempDir d;
  make(d, Arch::qwen3, Dtype::bf16);
  patch_config(d, "architectures", {"GPT2LMHeadModel"});
  expect_error([&] { load_model(d.str(), {.show_progress = false}); },
               {"config.json", "\"GPT2LMHeadModel\" is not supported", "Qwen2ForCausalLM",
                "Qwen3ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM", "Phi3ForCausalLM"});
}

}  // namespace
}  // namespace hogwild
