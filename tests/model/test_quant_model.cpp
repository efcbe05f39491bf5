// Quantized checkpoints end to end: `make-model --quant` output, loaded by load_model and run on
// the CPU backend, gives the logits of the dense checkpoint whose weights this test dequantizes
// itself from the stored int32 / fp8 tensors (tests/model/quant_reference.h: the AutoAWQ, AutoGPTQ
// and transformers FP8 definitions), for awq, gptq (sym, asym, desc_act) and fp8, on qwen3 and
// phi3 (fused qkv_proj / gate_up_proj as one quantized layer) and every other architecture. Also:
// the quantized weights are the round-to-nearest quantization of the values a dense make-model
// of the same seed holds, and the make-model quant options' errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cpu/cpu_backend.h"
#include "engine/plain.h"
#include "hogwild/codec.h"
#include "model/loader.h"
#include "model/make_model.h"
#include "model/weights.h"
#include "sampling/sampler.h"
#include "tests/greedy_logits.h"
#include "tests/model/quant_reference.h"
#include "tests/model/test_util.h"

namespace hogwild {
namespace {

using test::expect_error;
using test::TempDir;

struct QCase {
  const char* name;
  QuantMethod method;
  int64_t group_size = 0;
  bool desc_act = false;
  bool sym = true;
};

void PrintTo(const QCase& q, std::ostream* os) { *os << q.name; }

const QCase kCases[] = {
    {"awq", QuantMethod::awq},
    {"awq_g32", QuantMethod::awq, 32},
    {"gptq_sym", QuantMethod::gptq, 32},
    {"gptq_asym", QuantMethod::gptq, 32, false, false},
    {"gptq_desc_act", QuantMethod::gptq, 32, true, true},
    {"gptq_desc_act_asym", QuantMethod::gptq, 32, true, false},
    {"fp8", QuantMethod::fp8},
};

MakeModelOptions options(Arch a, const QCase& q, const std::string& dir, Dtype dt = Dtype::bf16) {
  MakeModelOptions o;
  o.arch = a;
  o.preset = "tiny";
  o.seed = 5;
  o.dtype = dt;
  o.out_dir = dir;
  o.show_progress = false;
  o.quant = q.method;
  o.group_size = q.group_size;
  o.desc_act = q.desc_act;
  o.sym = q.sym;
  return o;
}

// Logits of every position of a 12-token prompt and 6 greedy steps.
std::vector<float> run_logits(const ModelWeights& w) {
  cpu::CpuBackend backend{ModelWeights(w)};
  const std::vector<int32_t> prompt = {3, 17, 250, 9, 1, 77, 402, 5, 63, 311, 8, 120};
  return testing::greedy_logits(backend, prompt, 6).logits;
}

void expect_same_weights(const ModelWeights& a, const ModelWeights& b) {
  EXPECT_EQ(a.embed_tokens, b.embed_tokens);
  EXPECT_EQ(a.lm_head, b.lm_head);
  EXPECT_EQ(a.norm, b.norm);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (size_t l = 0; l < a.layers.size(); ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const LayerWeights &x = a.layers[l], &y = b.layers[l];
    EXPECT_EQ(x.q_proj, y.q_proj);
    EXPECT_EQ(x.k_proj, y.k_proj);
    EXPECT_EQ(x.v_proj, y.v_proj);
    EXPECT_EQ(x.o_proj, y.o_proj);
    EXPECT_EQ(x.gate_proj, y.gate_proj);
    EXPECT_EQ(x.up_proj, y.up_proj);
    EXPECT_EQ(x.down_proj, y.down_proj);
    EXPECT_EQ(x.q_bias, y.q_bias);
    EXPECT_EQ(x.input_layernorm, y.input_layernorm);
    EXPECT_EQ(x.post_attention_layernorm, y.post_attention_layernorm);
  }
}

class QuantModel : public ::testing::TestWithParam<std::tuple<Arch, QCase>> {};

TEST_P(QuantModel, LogitsEqualTheDenseCheckpointItDefines) {
  const auto [arch, qc] = GetParam();
  TempDir qdir, ddir;
  const ModelConfig made = make_model(options(arch, qc, qdir.str()));
  ASSERT_EQ(made.quantization_config.method, qc.method);
  // The config.json as the releases write it.
  nlohmann::json cj;
  std::ifstream(qdir / "config.json") >> cj;
  const nlohmann::json& q = cj.at("quantization_config");
  EXPECT_EQ(q.at("quant_method"), quant_method_name(qc.method));
  if (qc.method == QuantMethod::fp8) {
    EXPECT_EQ(q.at("fmt"), "e4m3");
    EXPECT_EQ(q.at("activation_scheme"), "dynamic");
    EXPECT_EQ(q.at("weight_block_size"), nlohmann::json({128, 128}));
  } else {
    EXPECT_EQ(q.at("bits"), 4);
    // Default: the largest of 128, 64, 32 dividing every in_features (tiny: 64, 128, and qwen2's
    // intermediate_size 160).
    const int64_t def = arch == Arch::qwen2 ? 32 : 64;
    EXPECT_EQ(q.at("group_size"), qc.group_size ? qc.group_size : def);
    if (qc.method == QuantMethod::awq) {
      EXPECT_EQ(q.at("zero_point"), true);
      EXPECT_EQ(q.at("version"), "gemm");
    } else {
      EXPECT_EQ(q.at("desc_act"), qc.desc_act);
      EXPECT_EQ(q.at("sym"), qc.sym);
      EXPECT_EQ(q.at("checkpoint_format"), "gptq");
    }
  }
  // 7 linear layers per layer (5 with Phi3's fused tensors), 2 layers.
  const int per_layer = arch == Arch::phi3 ? 4 : 7;
  EXPECT_EQ(test::write_dequantized_copy(qdir.str(), ddir.str()), 2 * per_layer);

  const ModelWeights wq = load_model(qdir.str(), {.show_progress = false});
  const ModelWeights wd = load_model(ddir.str(), {.show_progress = false});
  EXPECT_EQ(wd.config.quantization_config.method, QuantMethod::none);
  expect_same_weights(wq, wd);
  EXPECT_EQ(run_logits(wq), run_logits(wd));
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<Arch, QCase>>& info) {
  return std::string(arch_short_name(std::get<0>(info.param))) + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(QwenAndPhi3, QuantModel,
                         ::testing::Combine(::testing::Values(Arch::qwen3, Arch::phi3),
                                            ::testing::ValuesIn(kCases)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(OtherArchs, QuantModel,
                         ::testing::Combine(::testing::Values(Arch::qwen2, Arch::llama,
                                                              Arch::mistral),
                                            ::testing::Values(kCases[0], kCases[5], kCases[6])),
                         case_name);

TEST(QuantModel, WeightsAreTheRoundedValuesOfTheDenseModel) {
  // The fp32 model of the same seed holds the unquantized values; each quantized weight is within
  // half a step of it (int4: s / 2 of its group, bounded here by the layer's largest scale / 2;
  // fp8: 2^-4 relative, or 2^-10 * scale_inv below e4m3's smallest normal).
  for (const QCase& qc : {kCases[0], kCases[5], kCases[6]}) {
    SCOPED_TRACE(qc.name);
    TempDir qdir, fdir;
    make_model(options(Arch::phi3, qc, qdir.str()));
    make_model(options(Arch::phi3, QCase{"dense", QuantMethod::none}, fdir.str(), Dtype::f32));
    const ModelWeights wq = load_model(qdir.str(), {.show_progress = false});
    const ModelWeights wf = load_model(fdir.str(), {.show_progress = false});
    Checkpoint ck(qdir.str());
    const LayerWeights &a = wq.layers[1], &b = wf.layers[1];
    const std::string m = "model.layers.1.self_attn.qkv_proj";
    double bound = 0;
    if (qc.method == QuantMethod::fp8) {
      bound = 0;  // per element below
      const std::vector<float> si = test::ref_tensor<float>(ck, m + ".weight_scale_inv");
      ASSERT_EQ(si.size(), 1u);  // [128, 64] in one 128x128 block
      for (size_t i = 0; i < a.q_proj.size(); ++i) {
        const double x = b.q_proj[i];
        ASSERT_LE(std::abs(a.q_proj[i] - x),
                  std::max(std::abs(x) * 0x1p-4, 0x1p-10 * si[0]) * 1.000001)
            << i;
      }
      continue;
    }
    for (uint16_t s : test::ref_tensor<uint16_t>(ck, m + ".scales"))
      bound = std::max(bound, double(test::ref_f16(s)) / 2);
    double worst = 0;
    for (size_t i = 0; i < a.q_proj.size(); ++i)
      worst = std::max(worst, double(std::abs(a.q_proj[i] - b.q_proj[i])));
    EXPECT_LE(worst, bound * 1.0001);
    EXPECT_GT(worst, 0.0);  // quantized, not a copy
  }
}

TEST(QuantModel, ShardedQuantizedCheckpointKeepsALayersPiecesTogether) {
  TempDir one, many;
  make_model(options(Arch::qwen2, kCases[3], one.str()));
  MakeModelOptions o = options(Arch::qwen2, kCases[3], many.str());
  o.max_shard_size = 20000;
  make_model(o);
  nlohmann::json idx;
  std::ifstream(many / "model.safetensors.index.json") >> idx;
  const auto& map = idx.at("weight_map");
  for (const char* piece : {".qzeros", ".scales", ".g_idx"})
    EXPECT_EQ(map.at(std::string("model.layers.1.mlp.down_proj") + piece),
              map.at("model.layers.1.mlp.down_proj.qweight"));
  std::set<std::string> files;
  for (const auto& [name, file] : map.items()) files.insert(file.get<std::string>());
  EXPECT_GT(files.size(), 2u);
  expect_same_weights(load_model(one.str(), {.show_progress = false}),
                      load_model(many.str(), {.show_progress = false}));
}

TEST(QuantModel, SameSeedSameBytes) {
  for (const QCase& qc : {kCases[1], kCases[5], kCases[6]}) {
    SCOPED_TRACE(qc.name);
    TempDir a, b, c;
    make_model(options(Arch::phi3, qc, a.str()));
    make_model(options(Arch::phi3, qc, b.str()));
    MakeModelOptions o = options(Arch::phi3, qc, c.str());
    o.seed = 6;
    make_model(o);
    const std::string fa = test::read_file(a / "model.safetensors");
    EXPECT_EQ(fa, test::read_file(b / "model.safetensors"));
    EXPECT_NE(fa, test::read_file(c / "model.safetensors"));
    EXPECT_EQ(test::read_file(a / "config.json"), test::read_file(b / "config.json"));
  }
}

TEST(QuantModel, DescActStoresANonContiguousGIdx) {
  TempDir d;
  make_model(options(Arch::qwen3, kCases[4], d.str()));
  Checkpoint ck(d.str());
  const std::vector<int32_t> g =
      test::ref_tensor<int32_t>(ck, "model.layers.0.mlp.down_proj.g_idx");
  ASSERT_EQ(g.size(), 128u);
  std::vector<int> count(4, 0);
  bool contiguous = true;
  for (size_t k = 0; k < g.size(); ++k) {
    ASSERT_GE(g[k], 0);
    ASSERT_LT(g[k], 4);
    ++count[size_t(g[k])];
    contiguous = contiguous && g[k] == int32_t(k / 32);
  }
  EXPECT_FALSE(contiguous);
  for (int c : count) EXPECT_EQ(c, 32);
}

// A Qwen3-MoE checkpoint quantizes its experts and keeps the router (mlp.gate) dense, as the
// published AWQ / GPTQ / FP8 MoE releases do; the CPU backend runs it.
TEST(QuantModel, MoeExpertsQuantizedRouterDense) {
  for (const QCase& qc : {kCases[0], kCases[6]}) {
    SCOPED_TRACE(qc.name);
    TempDir d;
    make_model(options(Arch::qwen3_moe, qc, d.str()));
    const ModelConfig c = load_model_config(d.str());
    Checkpoint ck(d.str());
    int routers = 0, experts = 0;
    for (const CheckedTensor& t : check_checkpoint(c, ck, d.str())) {
      if (t.spec.kind == TensorKind::router) {
        ++routers;
        EXPECT_EQ(t.format, WeightFormat::dense) << t.spec.name;
      }
      if (is_expert_tensor(t.spec.kind)) {
        ++experts;
        EXPECT_NE(t.format, WeightFormat::dense) << t.spec.name;
      }
    }
    EXPECT_EQ(routers, c.num_moe_layers());
    EXPECT_EQ(experts, c.num_moe_layers() * c.num_experts * 3);
    LoadOptions lo;
    lo.show_progress = false;
    cpu::CpuBackend be(load_model(d.str(), lo));
    ForwardBatch b;
    const BlockId blk = be.new_block();
    b.views = {{blk}};
    for (int32_t id : {1, 2, 3}) b.tokens.push_back({id, 0, blk, true});
    std::vector<float> logits;
    be.forward(b, logits);
    ASSERT_EQ(static_cast<int64_t>(logits.size()), 3 * c.vocab_size);
    for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  }
}

TEST(QuantModel, MakeModelRefusesOptionsThatDoNotFit) {
  TempDir d;
  auto make = [&](QCase q, const std::string& preset = "tiny", Arch a = Arch::qwen3) {
    MakeModelOptions o = options(a, q, d.str());
    o.preset = preset;
    o.force = true;
    make_model(o);
  };
  expect_error(
      [&] {
        make({"", QuantMethod::awq, 128});
      },
      {"--group-size 128 does not divide in_features 64", "use 32, 64"});
  expect_error([&] { make({"", QuantMethod::awq, 48}); }, {"--group-size 48", "32, 64 or 128"});
  expect_error([&] { make({"", QuantMethod::gptq, 24}); }, {"--group-size 24", "multiple of 16"});
  expect_error([&] { make({"", QuantMethod::awq, 0, true}); }, {"--desc-act", "AWQ"});
  expect_error([&] { make({"", QuantMethod::awq, 0, false, false}); }, {"--no-sym", "AWQ"});
  expect_error([&] { make({"", QuantMethod::fp8, 64}); }, {"--quant fp8", "--group-size"});
  expect_error([&] { make({"", QuantMethod::none, 64}); }, {"--group-size", "--quant"});
  // qwen2 tiny has intermediate_size 160: 64 and 128 do not divide it, 32 does.
  expect_error(
      [&] {
        make({"", QuantMethod::gptq, 64}, "tiny", Arch::qwen2);
      },
      {"--group-size 64 does not divide in_features 160", "model.layers.0.mlp.down_proj",
       "use 32"});
  MakeModelOptions o = options(Arch::qwen2, QCase{"", QuantMethod::awq}, d.str());
  o.force = true;
  EXPECT_EQ(make_model(o).quantization_config.group_size, 32);
}

}  // namespace
}  // namespace hogwild
